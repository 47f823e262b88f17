/** The plugin's options: OPENWOP_CONFIG `plugins["example.greetings"]`, validated against OPTIONS_SCHEMA at start. */
export interface GreetingsOptions {
  /** The word the greeting starts with (default "Hello"). */
  greeting?: string;
  /** Scopes a principal must hold to see and call the greet tool (default: none). */
  scopes?: string[];
}

/** JSON Schema (draft 2020-12) of the options: the host refuses to load the plugin when they do not match. */
export const OPTIONS_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    greeting: { type: 'string', minLength: 1, maxLength: 40 },
    scopes: { type: 'array', items: { type: 'string', minLength: 1 }, uniqueItems: true },
  },
};

export function greet(options: GreetingsOptions, name: string): string {
  return `${options.greeting ?? 'Hello'}, ${name}!`;
}
