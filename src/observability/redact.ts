/** What logs and messages must never show. */

/**
 * Hides passwords in a connection URL, or in any text that may contain one (an error message, a
 * URL without a scheme, a `password=` query parameter), so it can be shown in messages and logs.
 */
export function redactUrl(text: string): string {
  return text
    .replace(/((?:^|[\s"'(=/])[^\s:/@"'()]+):([^\s/"']*)@/g, '$1:***@')
    .replace(/([?&]password=)[^&\s"']*/gi, '$1***');
}
