/**
 * ctxguard for pi (the coding agent): a thin extension that turns pi's events into calls of the
 * ctxguard binary, with a payload in Claude Code's hook shape, and puts each answer where pi lets
 * it reach the model:
 *
 *   tool_result            -> `ctxguard pretooluse`        the nudge, appended to the tool's result
 *   before_agent_start     -> `ctxguard userpromptsubmit`  the nudge, a hidden message after the prompt
 *   session_before_compact -> `ctxguard precompact`        the facts, handed to pi's own summarizer
 *   session_compact        -> `ctxguard sessionstart`      the recovery, a hidden message (source compact)
 *   session_start          -> `ctxguard sessionstart`      startup / resume / clear
 *   session_shutdown       -> `ctxguard sessionend`
 *
 * `/ctxguard` shows this session's state (`ctxguard status --session`).
 *
 * It never throws (every handler is wrapped), registers no `tool_call` handler (a throw there
 * would block the tool), bounds every call in time, and does nothing when the binary is missing,
 * fails, or prints nothing. It imports nothing of pi at load time: the package's name differs
 * between 0.73 (`@mariozechner/pi-coding-agent`) and 1.x (`@earendil-works/pi-coding-agent`);
 * both alias the old name to the running pi, which is where `compact` is taken from, when needed.
 *
 * Written by `ctxguard install --client pi` to `~/.pi/agent/extensions/ctxguard.ts` (with the
 * binary's path filled in below), or shipped in the npm package `ctxguard` (`pi install
 * npm:ctxguard`). Removed by `ctxguard uninstall --client pi`.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";

/** The binary's absolute path, written here by `ctxguard install --client pi`. */
const INSTALLED_BIN: string = "@@CTXGUARD_BIN@@";

/** A hook call's bound; PreCompact builds the checkpoint and gets more. */
const TIMEOUT_MS = 5000;
const PRECOMPACT_TIMEOUT_MS = 20000;
/** No more of the binary's output is read (a recovery block is a few kilobytes). */
const MAX_OUTPUT = 4 * 1024 * 1024;
const CUSTOM_TYPE = "ctxguard";

type Json = Record<string, unknown>;

/** The binary: $CTXGUARD_BIN, else the path install wrote, else the npm package's, else PATH's. */
function binary(): string {
	const fromEnv = process.env.CTXGUARD_BIN;
	if (fromEnv) return fromEnv;
	if (!INSTALLED_BIN.startsWith("@@")) return INSTALLED_BIN;
	try {
		// In the npm package, pi/ctxguard.ts sits beside bin/ctxguard.exe (the native binary).
		const here = typeof __dirname === "string" ? __dirname : "";
		const packaged = here ? join(dirname(here), "bin", "ctxguard.exe") : "";
		if (packaged && existsSync(packaged)) return packaged;
	} catch {
		// No file of our own to go by: PATH's.
	}
	return "ctxguard";
}

/** What the binary printed for the model: `hookSpecificOutput.additionalContext`, or plain text. */
export function answerOf(stdout: string): string {
	const text = stdout.trim();
	if (!text) return "";
	let parsed: unknown;
	try {
		parsed = JSON.parse(text);
	} catch {
		return text;
	}
	const context = (parsed as any)?.hookSpecificOutput?.additionalContext;
	return typeof context === "string" ? context.trim() : "";
}

/** Runs `ctxguard <sub>` with `payload` on stdin; its answer, or "" on any failure. */
function call(sub: string, payload: Json, timeout = TIMEOUT_MS): string {
	try {
		const r = spawnSync(binary(), [sub], {
			input: JSON.stringify(payload),
			encoding: "utf8",
			timeout,
			maxBuffer: MAX_OUTPUT,
			stdio: ["pipe", "pipe", "ignore"],
			windowsHide: true,
		});
		if (r.error || r.status !== 0 || typeof r.stdout !== "string") return "";
		return answerOf(r.stdout);
	} catch {
		return "";
	}
}

/** The fields every payload has, or undefined when pi keeps no session file (`--no-session`). */
function base(ctx: any, event: string): Json | undefined {
	const sm = ctx?.sessionManager;
	const file = sm?.getSessionFile?.();
	if (typeof file !== "string" || !file) return undefined;
	const p: Json = {
		session_id: sm.getSessionId(),
		transcript_path: file,
		cwd: ctx.cwd,
		hook_event_name: event,
	};
	const model = ctx.model;
	if (model && typeof model.provider === "string" && typeof model.id === "string") {
		p.model = `${model.provider}/${model.id}`;
	}
	if (model && typeof model.contextWindow === "number" && model.contextWindow > 0) {
		p.context_window = model.contextWindow;
	}
	return p;
}

/** A hidden message for the model, as `before_agent_start` returns it and `sendMessage` takes it. */
const message = (content: string) => ({ customType: CUSTOM_TYPE, content, display: false });

/** Sends `content` to the model; pi 1.x returns a promise, whose failure is ignored too. */
function send(pi: any, content: string, options?: Json) {
	try {
		const r = options ? pi.sendMessage(message(content), options) : pi.sendMessage(message(content));
		if (r && typeof r.catch === "function") r.catch(() => {});
	} catch {
		// Nothing reaches the model this time; the binary gives the recovery again when it sees so.
	}
}

/** Where pi's `compact` is: both 0.73 and 1.x alias this name to the running pi. */
const PI_PACKAGE = "@mariozechner/pi-coding-agent";

/** pi's own summary with `facts` added to the user's instructions, or undefined on any failure. */
async function compactWith(event: any, ctx: any, facts: string): Promise<unknown> {
	const model = ctx.model;
	if (!model || !event?.preparation) return undefined;
	const auth = await ctx.modelRegistry.getApiKeyAndHeaders(model);
	if (!auth || auth.ok === false) return undefined;
	const pi = await import(PI_PACKAGE);
	if (typeof pi?.compact !== "function") return undefined;
	const given = typeof event.customInstructions === "string" ? event.customInstructions : "";
	const instructions = given ? `${given}\n\n${facts}` : facts;
	// 1.x may route the request elsewhere (baseUrl) and give it variables (env); 0.73 has neither.
	const target = auth.baseUrl ? { ...model, baseUrl: auth.baseUrl } : model;
	const args: unknown[] = [event.preparation, target, auth.apiKey, auth.headers, instructions, event.signal];
	if (auth.env) args.push(undefined, undefined, auth.env);
	return await pi.compact(...args);
}

/** 0.73's event has no reason: a manual `/compact` is known only by its instructions. */
function trigger(event: any): "manual" | "auto" {
	if (typeof event?.reason === "string") return event.reason === "manual" ? "manual" : "auto";
	return typeof event?.customInstructions === "string" && event.customInstructions !== "" ? "manual" : "auto";
}

const START_SOURCE: Record<string, string> = {
	startup: "startup",
	resume: "resume",
	new: "clear",
	fork: "resume",
};

/** A handler that never throws: pi would report it as an extension error (and a throw in
 * `tool_call`, which is not registered, would block the tool). */
function guarded(run: (event: any, ctx: any) => unknown) {
	return async (event: any, ctx: any) => {
		try {
			return await run(event, ctx);
		} catch {
			return undefined;
		}
	};
}

/** `/ctxguard`: this session's state as `ctxguard status --session` prints it. It is also how
 * `ctxguard doctor --client pi` sees that pi loaded this file (RPC `get_commands` lists it). */
function registerStatus(pi: any) {
	pi.registerCommand("ctxguard", {
		description: "ctxguard: this session's context, nudges and checkpoints (ctxguard status)",
		handler: guarded((_args, ctx) => {
			const id = ctx?.sessionManager?.getSessionId?.();
			const r = spawnSync(binary(), id ? ["status", "--session", id] : ["status"], {
				encoding: "utf8",
				timeout: TIMEOUT_MS,
				maxBuffer: MAX_OUTPUT,
				stdio: ["ignore", "pipe", "pipe"],
				windowsHide: true,
			});
			const text = `${r.stdout || ""}${r.stderr || ""}`.trim() || "ctxguard: no answer from the binary";
			if (ctx?.hasUI) ctx.ui.notify(text, r.status === 0 ? "info" : "warning");
			return undefined;
		}),
	});
}

export default function ctxguard(pi: any) {
	try {
		registerStatus(pi);
	} catch {
		// An older pi without commands: the hooks below still work.
	}
	// Whether the agent's run has ended (a compaction after it, on 1.x, waits for the next prompt;
	// one during the run is steered into it).
	let runEnded = true;
	pi.on("agent_start", guarded(() => {
		runEnded = false;
	}));
	pi.on("agent_end", guarded(() => {
		runEnded = true;
	}));

	pi.on("tool_result", guarded((event, ctx) => {
		const p = base(ctx, "PreToolUse");
		if (!p) return undefined;
		p.tool_name = event.toolName;
		p.tool_input = event.input;
		p.tool_use_id = event.toolCallId;
		const answer = call("pretooluse", p);
		if (!answer) return undefined;
		const content = Array.isArray(event.content) ? event.content : [];
		return { content: [...content, { type: "text", text: answer }] };
	}));

	pi.on("before_agent_start", guarded((event, ctx) => {
		const p = base(ctx, "UserPromptSubmit");
		if (!p) return undefined;
		p.prompt = typeof event.prompt === "string" ? event.prompt : "";
		const answer = call("userpromptsubmit", p);
		return answer ? { message: message(answer) } : undefined;
	}));

	pi.on("session_before_compact", guarded(async (event, ctx) => {
		const p = base(ctx, "PreCompact");
		if (!p) return undefined;
		p.trigger = trigger(event);
		p.custom_instructions = typeof event.customInstructions === "string" ? event.customInstructions : "";
		const facts = call("precompact", p, PRECOMPACT_TIMEOUT_MS);
		if (!facts) return undefined;
		const compaction = await compactWith(event, ctx, facts);
		return compaction ? { compaction } : undefined;
	}));

	pi.on("session_compact", guarded((event, ctx) => {
		const p = base(ctx, "SessionStart");
		if (!p) return undefined;
		p.source = "compact";
		const answer = call("sessionstart", p);
		if (!answer) return undefined;
		// 0.73 (no reason): a plain message lands in the first request after the compaction, the
		// retried one too. 1.x: a plain one after the run ended starts a turn of its own, so it
		// waits for the next prompt; a retry, or a compaction inside the run, takes it now.
		const v1 = typeof event.reason === "string";
		if (v1 && !event.willRetry && runEnded) send(pi, answer, { deliverAs: "nextTurn" });
		else send(pi, answer);
		return undefined;
	}));

	pi.on("session_start", guarded((event, ctx) => {
		const source = START_SOURCE[event?.reason];
		if (!source) return undefined;
		const p = base(ctx, "SessionStart");
		if (!p) return undefined;
		p.source = source;
		const answer = call("sessionstart", p);
		if (answer) send(pi, answer, { deliverAs: "nextTurn" });
		return undefined;
	}));

	pi.on("session_shutdown", guarded((event, ctx) => {
		const p = base(ctx, "SessionEnd");
		if (!p) return undefined;
		p.reason = typeof event?.reason === "string" ? event.reason : "other";
		call("sessionend", p);
		return undefined;
	}));
}
