import { z } from 'zod';

/**
 * Interactive message actions (docs/ACTIONS.md): the buttons and selects a bot's message may carry.
 * A user's click is the operation `messages.invokeAction`, which sends `action.invoked` to the bot that
 * sent the message. One schema validates what bots send (strict, with limits) and another describes what
 * reads give back (message views, `message.*` event data); both live here so that the event catalogue
 * (domain/events.ts) and the operations share them.
 */

export const ACTION_LIMITS = {
  /** Actions (buttons and selects together) one message may carry. */
  actions: 10,
  idPattern: /^[a-z0-9_.-]{1,64}$/,
  label: 75,
  /** A button's value, and the `value` a click may carry. */
  value: 2000,
  placeholder: 150,
  options: 25,
  optionLabel: 75,
  optionValue: 150,
} as const;

export const ACTION_STYLES = ['default', 'primary', 'danger'] as const;

const actionId = z
  .string({ message: 'must be a string' })
  .regex(ACTION_LIMITS.idPattern, 'must be 1 to 64 characters of a-z, 0-9, "_", "." and "-"');

const text = (max: number) =>
  z
    .string({ message: 'must be a string' })
    .trim()
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`);

const ButtonInput = z.strictObject({
  type: z.literal('button'),
  id: actionId,
  label: text(ACTION_LIMITS.label),
  value: z
    .string({ message: 'must be a string' })
    .max(ACTION_LIMITS.value, `must be at most ${ACTION_LIMITS.value} characters`),
  style: z.enum(ACTION_STYLES, { message: `must be one of ${ACTION_STYLES.join(', ')}` }).default('default'),
});

const OptionInput = z.strictObject({
  label: text(ACTION_LIMITS.optionLabel),
  value: z
    .string({ message: 'must be a string' })
    .min(1, 'must not be empty')
    .max(ACTION_LIMITS.optionValue, `must be at most ${ACTION_LIMITS.optionValue} characters`),
});

const SelectInput = z.strictObject({
  type: z.literal('select'),
  id: actionId,
  placeholder: text(ACTION_LIMITS.placeholder).nullable().default(null),
  options: z
    .array(OptionInput, { message: 'must be an array of {label, value}' })
    .min(1, 'must have at least 1 option')
    .max(ACTION_LIMITS.options, `must have at most ${ACTION_LIMITS.options} options`)
    .superRefine((options, ctx) => {
      const seen = new Set<string>();
      options.forEach((o, i) => {
        if (seen.has(o.value))
          ctx.addIssue({
            code: 'custom',
            path: [i, 'value'],
            message: `duplicate option value "${o.value}"`,
          });
        seen.add(o.value);
      });
    }),
});

const ActionInput = z.discriminatedUnion('type', [ButtonInput, SelectInput], {
  error: (iss) =>
    iss.code === 'invalid_union' || iss.code === 'invalid_type'
      ? 'must be an object with "type" "button" or "select"'
      : undefined,
});

/**
 * What a bot sends as `actions`: up to ACTION_LIMITS.actions buttons and selects with unique ids;
 * `null` or `[]` means none.
 */
export const MessageActionsInput = z
  .array(ActionInput, { message: 'must be an array of actions, or null' })
  .max(ACTION_LIMITS.actions, `must have at most ${ACTION_LIMITS.actions} actions`)
  .superRefine((actions, ctx) => {
    const seen = new Set<string>();
    actions.forEach((a, i) => {
      if (seen.has(a.id))
        ctx.addIssue({
          code: 'custom',
          path: [i, 'id'],
          message: `duplicate action id "${a.id}" (ids must be unique within a message)`,
        });
      seen.add(a.id);
    });
  })
  .nullable()
  .describe(
    `Interactive actions (buttons, selects) for users to click; only bots may send them. At most ${ACTION_LIMITS.actions}, ids unique within the message; null or [] for none.`,
  );

// --- what reads give back --------------------------------------------------------------------------

export const ButtonAction = z.object({
  type: z.literal('button'),
  id: z.string(),
  label: z.string(),
  value: z.string().describe('Sent as the value of action.invoked when clicked'),
  style: z.enum(ACTION_STYLES),
});
export const SelectAction = z.object({
  type: z.literal('select'),
  id: z.string(),
  placeholder: z.string().nullable(),
  options: z.array(z.object({ label: z.string(), value: z.string() })),
});
export const MessageAction = z.discriminatedUnion('type', [ButtonAction, SelectAction]);
export type MessageAction = z.infer<typeof MessageAction>;

/** The `actions` of a message view or message event: null when the message carries none. */
export const MessageActions = z
  .array(MessageAction)
  .nullable()
  .describe('Interactive actions (buttons, selects) of a bot message; null for none');

/** A validated input as it is stored: the JSON text, or null for none (null and [] alike). */
export function storeActions(actions: readonly MessageAction[] | null | undefined): string | null {
  return actions && actions.length > 0 ? JSON.stringify(actions) : null;
}

/** The stored JSON text read back; null for none (or for text that is not an array). */
export function readActions(stored: string | null | undefined): MessageAction[] | null {
  if (!stored) return null;
  try {
    const v: unknown = JSON.parse(stored);
    return Array.isArray(v) && v.length > 0 ? (v as MessageAction[]) : null;
  } catch {
    return null;
  }
}
