//! Code mode's cells fed to the builder: each tool call a cell makes (read by
//! [`crate::rollout::code_mode`]) becomes the call Codex would have made without code mode, and
//! the cell's output is shared out among them once the cell ends (through `wait` when it ran
//! past its yield time). A command still running when its result came is a background command
//! whose later output (`write_stdin`) gives its verdict, as a `TaskOutput` does on Claude Code.
//!
//! Which part of a cell's output is whose: a cell with one command gives it all its parts; a
//! cell with several commands and nothing else that prints gives part `i` to command `i` when
//! there are exactly as many parts as commands. Anything else (a command in a loop, a cell that
//! threw, parts merged by Codex's cut) leaves the commands without a result: named, never given
//! another command's output.

use std::collections::VecDeque;

use serde_json::{json, Value};

use super::Feeder;
use crate::rollout::code_mode::{self, CellCall, CellStatus, ExecResult};

/// Cells waiting for their output or running, at most (the oldest forgotten).
const MAX_CELLS: usize = 32;
/// Background sessions and `write_stdin` calls remembered, at most.
const MAX_SESSIONS: usize = 32;
/// Parts of a running cell kept, at most.
const MAX_PARTS: usize = 64;

/// A cell between its call and its end.
#[derive(Debug)]
pub(super) struct Cell {
    /// The `exec` call's id (its calls are `<id>#<n>`).
    id: String,
    calls: Vec<CellCall>,
    /// Codex's id for it once it ran past its yield time.
    running: Option<String>,
    parts: Vec<String>,
    /// It ended within its first output, this many seconds after it started: a command that
    /// would yield later than that had ended.
    ended_within: Option<f64>,
}

/// The cells and background sessions of a rollout, as far as read.
#[derive(Debug, Default)]
pub(super) struct Cells {
    cells: VecDeque<Cell>,
    /// `wait` calls: the call's id and the cell it waits for.
    waits: VecDeque<(String, String)>,
    /// `write_stdin` calls (outside cells) waiting for output: the call's id and its session.
    stdin: VecDeque<(String, String)>,
}

fn push_bounded<T>(list: &mut VecDeque<T>, item: T, cap: usize) {
    list.push_back(item);
    if list.len() > cap {
        list.pop_front();
    }
}

/// A `write_stdin` argument's session (a number or a string).
pub(super) fn session_of(arg: &Value) -> Option<String> {
    match arg.get("session_id")? {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// The text a Bash result has when its command went to the background, which the tool log
/// reads as such (the command is named, not judged, until its output is read).
pub(super) fn backgrounded(session: &str, output: &str) -> String {
    format!("Command running in background with ID: {session}.\n{output}")
}

/// Does an output printed without its exit code say how its run ended (a runner's summary or
/// verdict line)? A cell that prints only `r.output` does not say whether the command is still
/// running: only a verdict line shows it got to its end.
fn says_it_ended(output: &str) -> bool {
    const NOTHING: &str = "exit 0, no summary line";
    !super::super::verify::verdict(output, false)
        .line
        .starts_with(NOTHING)
}

/// A later read of a background command's output, as a `TaskOutput` result says it: ended
/// when its exit code says so, or (printed without one) when its output has a verdict line.
pub(super) fn read_later(result: &ExecResult) -> String {
    match (&result.session, result.exit_code) {
        (None, Some(code)) => format!(
            "<status>{}</status>\n<exit_code>{code}</exit_code>\n<output>\n{}\n</output>",
            if code == 0 { "completed" } else { "failed" },
            result.output
        ),
        (None, None) if says_it_ended(&result.output) => format!(
            "<status>completed</status>\n<output>\n{}\n</output>",
            result.output
        ),
        _ => "<status>running</status>".to_string(),
    }
}

/// Did the cell end (after `ended_within` seconds) before `call`'s `yield_time_ms`? Then its
/// command had ended too: `exec_command` returns early only when its process exits.
fn ended_before_yield(ended_within: Option<f64>, call: &CellCall) -> bool {
    let yield_ms = call
        .arg
        .as_ref()
        .and_then(|a| a.get("yield_time_ms"))
        .and_then(Value::as_f64);
    matches!((ended_within, yield_ms), (Some(wall), Some(ms)) if wall * 1000.0 < ms)
}

/// Is this tool one whose result a cell does not print unasked (a patch, a plan)?
fn quiet(name: &str) -> bool {
    matches!(name, "apply_patch" | "update_plan")
}

impl Feeder {
    /// An `exec` call: its cell's tool calls, fed now as the calls they stand for.
    pub(super) fn cell(&mut self, id: &str, input: &str) {
        let calls = code_mode::calls(input);
        for (n, call) in calls.iter().enumerate() {
            let sub = format!("{id}#{n}");
            match (call.name.as_str(), &call.arg) {
                ("exec_command", Some(arg)) if arg.get("cmd").is_some_and(Value::is_string) => {
                    self.call(&sub, "exec_command", &arg.to_string());
                }
                ("apply_patch", Some(Value::String(patch))) => {
                    self.call(&sub, "apply_patch", patch);
                }
                ("update_plan", Some(arg)) => self.call(&sub, "update_plan", &arg.to_string()),
                // A command the reader could not follow is not named, nor a patch or plan it
                // could not read; a read of a session is fed with its output.
                ("exec_command" | "apply_patch" | "update_plan" | "write_stdin", _) => {}
                (name, _) => self.call(&sub, name, "{}"),
            }
        }
        push_bounded(
            &mut self.cells.cells,
            Cell {
                id: id.to_string(),
                calls,
                running: None,
                parts: Vec::new(),
                ended_within: None,
            },
            MAX_CELLS,
        );
    }

    /// A `wait` call: which running cell it waits for.
    pub(super) fn wait(&mut self, id: &str, arguments: &str) {
        let cell =
            serde_json::from_str::<Value>(arguments)
                .ok()
                .and_then(|a| match a.get("cell_id")? {
                    Value::String(s) => Some(s.clone()),
                    Value::Number(n) => Some(n.to_string()),
                    _ => None,
                });
        if let Some(cell) = cell {
            push_bounded(&mut self.cells.waits, (id.to_string(), cell), MAX_SESSIONS);
        }
    }

    /// A `write_stdin` call outside a cell: its output is its session's.
    pub(super) fn stdin(&mut self, id: &str, arguments: &str) {
        let session = serde_json::from_str::<Value>(arguments)
            .ok()
            .as_ref()
            .and_then(session_of);
        if let Some(session) = session {
            push_bounded(
                &mut self.cells.stdin,
                (id.to_string(), session),
                MAX_SESSIONS,
            );
        }
    }

    /// An output that belongs to a cell (its own or a `wait`'s) or to a `write_stdin`: fed, and
    /// true; false when it is another call's.
    pub(super) fn cell_output(&mut self, id: &str, text: &str, parts: &[String]) -> bool {
        if let Some(at) = self.cells.stdin.iter().position(|(c, _)| c == id) {
            let (_, session) = self.cells.stdin.remove(at).unwrap_or_default();
            let (output, code) = super::command_output(text);
            let running = code.is_none() && text.contains("Process running with session ID");
            let result = ExecResult {
                output,
                exit_code: code.filter(|_| !running),
                session: running.then(|| session.clone()),
            };
            self.read_session(id, &session, &result);
            return true;
        }
        let cell = if let Some(at) = self.cells.cells.iter().position(|c| c.id == id) {
            at
        } else if let Some(at) = self.cells.waits.iter().position(|(c, _)| c == id) {
            let (_, cell) = self.cells.waits.remove(at).unwrap_or_default();
            match self
                .cells
                .cells
                .iter()
                .position(|c| c.running.as_deref() == Some(cell.as_str()))
            {
                Some(at) => at,
                None => return true,
            }
        } else {
            return false;
        };
        let Some(out) = code_mode::output(parts) else {
            // Not a cell's output (a cut, an error from Codex itself): the cell is over.
            self.cells.cells.remove(cell);
            return true;
        };
        let entry = &mut self.cells.cells[cell];
        for part in out.parts {
            if entry.parts.len() < MAX_PARTS {
                entry.parts.push(part);
            }
        }
        if entry.running.is_none() {
            entry.ended_within = out.wall_seconds;
        }
        match out.status {
            CellStatus::Running(cell_id) => entry.running = Some(cell_id),
            status => {
                if let Some(cell) = self.cells.cells.remove(cell) {
                    self.settle(cell, status == CellStatus::Completed);
                }
            }
        }
        true
    }

    /// A cell that ended: each of its calls gets its result.
    fn settle(&mut self, cell: Cell, completed: bool) {
        let commands: Vec<usize> = (0..cell.calls.len())
            .filter(|n| cell.calls[*n].name == "exec_command")
            .collect();
        // `if (r.session_id) text((await tools.write_stdin({session_id: r.session_id, …})).output)`:
        // a read of the cell's one command's own session (named by a variable, not a number)
        // prints the rest of that command's output.
        let continues = |c: &CellCall| {
            commands.len() == 1
                && c.name == "write_stdin"
                && c.arg.as_ref().and_then(session_of).is_none()
        };
        let printing = cell
            .calls
            .iter()
            .filter(|c| !quiet(&c.name) && !continues(c))
            .count();
        let once = cell.calls.iter().all(|c| !c.repeated);
        let patch_failed = !completed
            || cell
                .parts
                .iter()
                .any(|p| p.contains("apply_patch verification failed"));
        for (n, call) in cell.calls.iter().enumerate() {
            let sub = format!("{}#{n}", cell.id);
            match call.name.as_str() {
                "apply_patch" => {
                    let text = if patch_failed {
                        "apply_patch failed"
                    } else {
                        "Success."
                    };
                    self.output(&sub, text);
                }
                "update_plan" if completed => self.output(&sub, "Plan updated"),
                _ => {}
            }
        }
        if !completed || !once {
            return;
        }
        // Whose are the parts: one printing call takes them all; several commands (and nothing
        // else that prints) one part each.
        let owners: Vec<(usize, Vec<&String>)> = if printing == 1 {
            match (0..cell.calls.len())
                .find(|n| !quiet(&cell.calls[*n].name) && !continues(&cell.calls[*n]))
            {
                Some(n) => vec![(n, cell.parts.iter().collect())],
                None => Vec::new(),
            }
        } else if commands.len() == printing && cell.parts.len() == commands.len() {
            commands
                .iter()
                .zip(&cell.parts)
                .map(|(n, p)| (*n, vec![p]))
                .collect()
        } else {
            Vec::new()
        };
        for (n, parts) in owners {
            let sub = format!("{}#{n}", cell.id);
            let results: Vec<ExecResult> =
                parts.iter().map(|p| code_mode::exec_result(p)).collect();
            let result = ExecResult {
                output: results
                    .iter()
                    .map(|r| r.output.as_str())
                    .filter(|o| !o.is_empty())
                    .collect::<Vec<_>>()
                    .join("\n"),
                exit_code: results.iter().find_map(|r| r.exit_code),
                session: results.iter().find_map(|r| r.session.clone()),
            };
            let call = &cell.calls[n];
            match call.name.as_str() {
                "exec_command" if !call.arg.as_ref().is_some_and(|a| a["cmd"].is_string()) => {}
                "exec_command" => match &result.session {
                    Some(session) => {
                        self.tool_result_text(&sub, &backgrounded(session, &result.output), false);
                    }
                    // Printed without its exit code and no verdict in it: it may still run,
                    // unless the cell ended before the command's yield time (it would have
                    // come back running only after that).
                    None if result.exit_code.is_none()
                        && !says_it_ended(&result.output)
                        && !ended_before_yield(cell.ended_within, call) =>
                    {
                        self.tool_result_text(&sub, &backgrounded("", &result.output), false);
                    }
                    None => {
                        let failed = result.exit_code.is_some_and(|c| c != 0);
                        self.tool_result_text(&sub, &result.output, failed);
                    }
                },
                "write_stdin" => {
                    if let Some(session) = call.arg.as_ref().and_then(session_of) {
                        self.read_session(&sub, &session, &result);
                    }
                }
                name if name.starts_with("mcp__") && name.contains("pull_request") => {
                    self.pull_request_result(name, &result.output);
                }
                _ => {}
            }
        }
    }

    /// A read of a background session's output (`write_stdin`), as a `TaskOutput` call and
    /// result.
    fn read_session(&mut self, id: &str, session: &str, result: &ExecResult) {
        let input = json!({ "task_id": session });
        self.tool_call(
            &json!({"type": "tool_use", "id": id, "name": "TaskOutput", "input": input})
                .to_string(),
        );
        self.tool_result_text(id, &read_later(result), false);
    }

    /// What a GitHub app's pull-request tool answered (`structuredContent` with `url`, `number`,
    /// `state`): the pull request, created or changed.
    fn pull_request_result(&mut self, tool: &str, output: &str) {
        let Ok(value) = serde_json::from_str::<Value>(output.trim()) else {
            return;
        };
        let Some(pr) = value.get("structuredContent") else {
            return;
        };
        let url = pr
            .get("url")
            .and_then(Value::as_str)
            .filter(|u| u.contains("/pull/"));
        let number = pr.get("number").and_then(Value::as_u64);
        let action = if tool.contains("create_pull_request") {
            Some("created")
        } else if tool.contains("merge_pull_request") {
            Some("merged")
        } else if tool.contains("update_pull_request") {
            Some("edited")
        } else {
            None
        };
        let merged = pr.get("merged").and_then(Value::as_bool) == Some(true);
        let state = if merged { Some("merged") } else { action };
        let mut text = match (number, url) {
            (Some(n), _) => format!("#{n}"),
            (None, Some(url)) => url.to_string(),
            (None, None) => return,
        };
        if let Some(state) = state {
            text = format!("{text} ({state})");
        }
        if let (Some(_), Some(url)) = (number, url) {
            text = format!("{text} {}", url.split_whitespace().next().unwrap_or(url));
        }
        self.builder.pull_request(&text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_background_read_says_what_a_task_output_says() {
        let done = ExecResult {
            output: "test result: ok. 1 passed".into(),
            exit_code: Some(0),
            session: None,
        };
        assert!(read_later(&done).starts_with("<status>completed</status>"));
        let failed = ExecResult {
            exit_code: Some(101),
            ..done.clone()
        };
        assert!(read_later(&failed).contains("<exit_code>101</exit_code>"));
        assert!(read_later(&failed).starts_with("<status>failed</status>"));
        // Without an exit code, only a verdict line says the run ended.
        let unknown = ExecResult {
            exit_code: None,
            ..done
        };
        assert!(read_later(&unknown).starts_with("<status>completed</status>"));
        let partial = ExecResult {
            output: "   Compiling widget v0.3.1\n".into(),
            ..unknown
        };
        assert_eq!(read_later(&partial), "<status>running</status>");
        assert_eq!(
            session_of(&json!({"session_id": 41873})).as_deref(),
            Some("41873")
        );
        assert_eq!(session_of(&json!({"session_id": ""})), None);
    }
}
