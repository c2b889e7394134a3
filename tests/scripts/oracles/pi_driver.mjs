// compactlab's driver for pi's own compaction functions (issue 42). Not pi's code: it imports pi's
// compaction.ts (copied verbatim from a snapshot by tests.scripts.oracles.pi, bundled with
// esbuild) and calls its exported functions on sessions already converted to pi's AgentMessage
// format. No model is called: only the pure functions (estimateTokens, calculateContextTokens,
// estimateContextTokens, shouldCompact, prepareCompaction, DEFAULT_COMPACTION_SETTINGS) run.
//
// stdin: {"windows": [int...], "sessions": [{"name": str, "messages": [AgentMessage...]}]}
// stdout: {"sessions": [{"name": str, "checks": [...]}]}  (the check kinds: see pi.py's docstring)

import {
	calculateContextTokens,
	DEFAULT_COMPACTION_SETTINGS,
	estimateContextTokens,
	estimateTokens,
	prepareCompaction,
	shouldCompact,
} from "./src/core/compaction/compaction.ts";

const settings = DEFAULT_COMPACTION_SETTINGS;

function readStdin() {
	return new Promise((resolve) => {
		const chunks = [];
		process.stdin.on("data", (c) => chunks.push(c));
		process.stdin.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
	});
}

// The session as pi's SessionManager holds it: one `message` entry per message, linked in a line.
function entriesOf(messages) {
	return messages.map((message, i) => ({
		type: "message",
		id: `m${i}`,
		parentId: i === 0 ? null : `m${i - 1}`,
		timestamp: new Date(1_700_000_000_000 + i).toISOString(),
		message,
	}));
}

// The largest context pi's shouldCompact still lets through in `window` (found by asking it).
function compactsAbove(window) {
	let lo = 0;
	let hi = window * 2;
	while (lo < hi) {
		const mid = Math.ceil((lo + hi) / 2);
		if (shouldCompact(mid, window, settings)) hi = mid - 1;
		else lo = mid;
	}
	return lo;
}

// What pi decides when asked to compact the path `entries[0:k]`.
function cutAt(entries, k) {
	const path = entries.slice(0, k);
	const prep = prepareCompaction(path, settings);
	if (!prep) return { first: null };
	const first = path.findIndex((e) => e.id === prep.firstKeptEntryId);
	let kept = 0;
	for (let i = first; i < k; i++) kept += estimateTokens(path[i].message);
	return {
		first,
		split: prep.isSplitTurn,
		summarized: prep.messagesToSummarize.length,
		prefix: prep.turnPrefixMessages.length,
		kept_tokens: kept,
		tokens_before: prep.tokensBefore,
	};
}

function lastAssistant(messages, k) {
	for (let i = k - 1; i >= 0; i--) if (messages[i].role === "assistant") return i;
	return -1;
}

function checksOf(messages, windows) {
	const entries = entriesOf(messages);
	const checks = [];
	checks.push({ kind: "estimates", tokens: messages.map((m) => estimateTokens(m)) });
	for (const window of windows) checks.push({ kind: "threshold", window, compacts_above: compactsAbove(window) });
	const calls = [];
	messages.forEach((m, i) => {
		if (m.role === "assistant" && m.stopReason !== "aborted" && m.stopReason !== "error") calls.push(i);
	});
	// pi's own check points: at agent_end (the run's last reply) and before the next prompt, which see
	// the same context: before each user message that follows a reply, and at the session's end.
	const prompts = [];
	messages.forEach((m, i) => {
		if (m.role === "user" && lastAssistant(messages, i) >= 0) prompts.push(i);
	});
	if (lastAssistant(messages, messages.length) >= 0) prompts.push(messages.length);
	for (const at of prompts) {
		const a = lastAssistant(messages, at);
		const reply = messages[a];
		// _checkCompaction: an errored reply has no usage, so the context is estimated from the last one.
		const tokens =
			reply.stopReason === "error"
				? estimateContextTokens(messages.slice(0, at)).tokens
				: calculateContextTokens(reply.usage);
		const compacts = {};
		for (const window of windows) compacts[window] = shouldCompact(tokens, window, settings);
		checks.push({
			kind: "prompt",
			at,
			calls: calls.filter((i) => i < at).length,
			reply: a,
			context_tokens: tokens,
			compacts,
			...cutAt(entries, at),
		});
	}
	// Before every recorded call: where compactlab's replay asks a preset (the cut pi would make there).
	for (const at of calls) {
		checks.push({ kind: "call", at, calls: calls.filter((i) => i < at).length, ...cutAt(entries, at) });
	}
	return checks;
}

const input = JSON.parse(await readStdin());
const out = { sessions: input.sessions.map((s) => ({ name: s.name, checks: checksOf(s.messages, input.windows) })) };
process.stdout.write(JSON.stringify(out));
