/** Who may register and unregister subscriptions: the protocol's webhooks:manage, or a run creator. */
export const WEBHOOK_MANAGERS = ['webhooks:manage', 'runs:create'] as const;
