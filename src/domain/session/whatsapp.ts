/**
 * WhatsApp identifier canonicalisation (SPEC KEY-2).
 *
 * Bridges report one person in several spellings: `15551234567@s.whatsapp.net`, `15551234567@c.us`,
 * `15551234567:3@s.whatsapp.net` (a linked device), `+1 (555) 123-4567` (E.164 with formatting), and
 * `123456789012345@lid` (a privacy-masked linked id). If these reached the session key as written,
 * one number would split into several sessions. The canonical form of a phone number is its bare
 * digits, no `+`, no device, no server.
 *
 * A LID is not a phone number and cannot be turned into one by rewriting text: only the bridge knows
 * which number it stands for. A caller that knows pairs passes them as `lidAliases`; an unknown LID
 * keeps an `@lid` marker so it can never be mistaken for a phone number that happens to share digits.
 */

/** Servers that mean "this is a person's phone number". */
const PHONE_SERVERS = new Set(['s.whatsapp.net', 'c.us', 'whatsapp.net']);
const LID_SERVER = 'lid';
const GROUP_SERVER = 'g.us';

/** Characters people and bridges put inside phone numbers. */
const PHONE_FORMATTING = /[\s().\-\u00a0]/g;

export interface WhatsAppCanonicalOptions {
  /** LID (digits, with or without `@lid`) → phone number in any accepted spelling. */
  readonly lidAliases?: ReadonlyMap<string, string> | Readonly<Record<string, string>>;
}

function lookupAlias(aliases: WhatsAppCanonicalOptions['lidAliases'], lid: string): string | undefined {
  if (aliases === undefined) return undefined;
  const keys = [lid, `${lid}@${LID_SERVER}`];
  for (const key of keys) {
    const hit =
      aliases instanceof Map
        ? (aliases as ReadonlyMap<string, string>).get(key)
        : Object.hasOwn(aliases, key)
          ? (aliases as Readonly<Record<string, string>>)[key]
          : undefined;
    if (hit !== undefined) return hit;
  }
  return undefined;
}

/** `user.agent:device` → `user`; the agent and device parts name a linked device, not a person. */
function stripDevice(user: string): string {
  const withoutDevice = user.replace(/:\d+$/, '');
  return withoutDevice.replace(/\.\d+$/, '');
}

/** Bare digits for anything that is plainly a phone number, else null. */
function phoneDigits(text: string): string | null {
  const compact = text.replace(PHONE_FORMATTING, '');
  const digits = compact.startsWith('+')
    ? compact.slice(1)
    : compact.startsWith('00')
      ? compact.slice(2)
      : compact;
  return /^\d{5,15}$/.test(digits) ? digits : null;
}

/**
 * The one spelling of a WhatsApp identifier used in session keys. Idempotent:
 * `canonical(canonical(x)) === canonical(x)`. Identifiers it does not recognise are returned trimmed
 * but otherwise unchanged, so a new bridge format degrades to "as written", never to a merge.
 */
export function canonicalWhatsAppIdentifier(id: string, options: WhatsAppCanonicalOptions = {}): string {
  const trimmed = id.trim();
  const at = trimmed.lastIndexOf('@');
  const user = at === -1 ? trimmed : trimmed.slice(0, at);
  const server = at === -1 ? null : trimmed.slice(at + 1).toLowerCase();

  if (server === LID_SERVER || (server === null && options.lidAliases !== undefined)) {
    const lid = stripDevice(user);
    const phone = lookupAlias(options.lidAliases, lid);
    if (phone !== undefined) return canonicalWhatsAppIdentifier(phone);
    if (server === LID_SERVER) return `${lid}@${LID_SERVER}`;
  }
  if (server === GROUP_SERVER) return user;
  if (server === null || PHONE_SERVERS.has(server)) {
    const bare = server === null ? user : stripDevice(user);
    return phoneDigits(bare) ?? bare;
  }
  return trimmed;
}
