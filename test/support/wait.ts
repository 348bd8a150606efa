/** Polling for a condition the way a person refreshing a query would, with a deadline. */
export async function waitFor(check: () => Promise<boolean>, timeoutMs = 60_000, intervalMs = 100): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
