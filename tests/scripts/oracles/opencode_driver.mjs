// compactlab's driver for opencode's own prune and isOverflow (issue 42). Not opencode's code: it
// imports the bundle `opencode.py` builds from the snapshot's files (copied verbatim, imports
// stubbed) and runs it on the sessions converted to opencode's message/part model.
//   node opencode_driver.mjs BUNDLE INPUT.json OUTPUT.json
import { readFileSync, writeFileSync } from "node:fs"
import { pathToFileURL } from "node:url"

const [bundle, input, output] = process.argv.slice(2)
const engine = await import(pathToFileURL(bundle).href)
const sessions = JSON.parse(readFileSync(input, "utf8"))
const results = []
for (const session of sessions) {
  const checks = []
  for (const point of session.points) {
    // opencode's prune reads the session's messages as they are at the end of a prompt loop;
    // structuredClone so that nothing the engine's loop touches leaks into the next point.
    const msgs = structuredClone(session.msgs.slice(0, point.messages))
    const found = engine.prune(msgs)
    const check = { messages: point.messages, erased: found.pruned > engine.PRUNE_MINIMUM ? found.toPrune : [], pruned: found.pruned, total: found.total }
    if (point.tokens) {
      // What opencode decides after this reply (processor.ts, at the step's finish, with the reply's
      // usage): at each window the point names. Newer overflow.ts export tokenCount; where it is
      // not exported (31e22f65), isOverflow's own count expression, the same sum, is written here.
      const t = point.tokens
      check.count = engine.tokenCount ? engine.tokenCount(t) : t.total || t.input + t.output + t.cache.read + t.cache.write
      for (const [label, limits] of Object.entries(point.windows)) {
        const model = { limit: { context: limits.context, output: limits.output } }
        check[label] = {
          window: limits.context,
          usable: engine.usable({ cfg: limits.cfg, model }),
          overflow: engine.isOverflow({ cfg: limits.cfg, tokens: t, model }),
        }
      }
    }
    checks.push(check)
  }
  results.push({ name: session.name, checks })
}
writeFileSync(output, JSON.stringify(results))
