// compactlab's driver for Gemini CLI's own compaction code (issue 42): our code, not the engine's.
// `tests.scripts.oracles.gemini_cli` copies the engine's files verbatim beside this one (their
// imports stubbed) and bundles it with esbuild. Input (argv[2], JSON): {contents: Content[], checks:
// [{end, lastPrompt}], window}. At each check, as client.ts processTurn does before a model call:
// the history is what the previous check's masking left plus the contents since (up to `end`);
// ChatCompressionService.compress is asked (open loop: its result is recorded, not applied), then
// ToolOutputMaskingService.mask, whose result the next check starts from (masking persists).
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ChatCompressionService } from './packages/core/src/context/chatCompressionService.js';
import { ToolOutputMaskingService } from './packages/core/src/context/toolOutputMaskingService.js';
import { CompressionStatus } from './packages/core/src/core/turn.js';
import { tokenLimit } from './packages/core/src/core/tokenLimits.js';

type Content = { role: string; parts?: any[] };
const SNAPSHOT = '<state_snapshot>oracle</state_snapshot>'; // no model is called: a fixed summary
const input = JSON.parse(readFileSync(process.argv[2], 'utf-8'));
const temp = mkdtempSync(path.join(tmpdir(), 'gemini-oracle-'));

function ids(history: Content[], changed: Content[]): string[] {
  const out: string[] = [];
  history.forEach((content, i) =>
    (content.parts || []).forEach((part, j) => {
      const before = part.functionResponse;
      const after = changed[i]?.parts?.[j]?.functionResponse;
      if (before && after && JSON.stringify(before.response) !== JSON.stringify(after.response)) out.push(before.id);
    }),
  );
  return out;
}

async function main() {
  const contents: Content[] = input.contents;
  let state: Content[] = [];
  const checks = [];
  for (const check of input.checks) {
    const history = [...state, ...contents.slice(state.length, check.end)];
    const lastPrompt = check.lastPrompt;
    const chat = { getHistory: () => history, getLastPromptTokenCount: () => lastPrompt };
    const config = {
      getCompressionThreshold: async () => undefined,
      getHookSystem: () => undefined,
      getNextCompressionTruncationId: () => 1,
      storage: { getProjectTempDir: () => temp },
      getTruncateToolOutputThreshold: () => Math.min(4 * (tokenLimit('oracle') - lastPrompt), 40_000),
      getBaseLlmClient: () => ({ generateContent: async () => ({ text: SNAPSHOT }) }),
      getContentGenerator: () => ({}),
      getToolOutputMaskingConfig: async () => ({
        protectionThresholdTokens: 50000,
        minPrunableThresholdTokens: 30000,
        protectLatestTurn: true,
      }),
      getSessionId: () => 'oracle',
    };
    const service = new ChatCompressionService();
    const { newHistory, info } = await service.compress(chat as any, 'p', false, 'oracle', config as any, false);
    let split: number | null = null;
    let truncated: string[] = [];
    if (info.compressionStatus !== CompressionStatus.NOOP || newHistory) {
      // The kept tail is newHistory minus the snapshot and the acknowledgement; recomputed from
      // the engine's own function for a failed (inflated) compression, which returns no history.
      split = newHistory ? history.length - (newHistory.length - 2) : null;
    }
    if (info.compressionStatus === CompressionStatus.COMPRESSION_FAILED_INFLATED_TOKEN_COUNT) {
      split = -1;
    }
    if (newHistory) truncated = ids(history.slice(split!), newHistory.slice(2));
    const masking = await new ToolOutputMaskingService().mask(history, config as any);
    const masked = ids(history, masking.newHistory as Content[]);
    state = masking.newHistory as Content[];
    checks.push({
      end: check.end,
      status: CompressionStatus[info.compressionStatus],
      split,
      truncated,
      masked,
    });
  }
  writeFileSync(process.argv[3], JSON.stringify(checks));
}
main();
