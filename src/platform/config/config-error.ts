/** An invalid setting (environment variable or OPENWOP_CONFIG file); the message names it. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}
