//! Codex's code mode (0.142 and later, the Desktop app, the VS Code extension and the CLI): the
//! model runs one custom tool, `exec`, whose input is a JavaScript cell that calls the real tools
//! (`await tools.exec_command({cmd: "cargo test"})`, `tools.apply_patch(patch)`,
//! `tools.update_plan({plan: [...]})`, `tools.mcp__…(…)`), and whose output is what the cell
//! printed (`text(r.output)`), each `text()` one part after a `Script completed` header.
//!
//! Read here without a JavaScript engine: [`calls`] finds each `tools.<name>(` outside strings
//! and comments and reads its first argument when it is a literal (an object with quoted or bare
//! keys, an array, a string in any quotes, `String.raw` or a template without `${}`, strings
//! joined by `+`, a `const` holding one of these); anything else is unknown, never guessed.
//! [`output`] splits a cell's output into its status and parts, and [`exec_result`] reads a part
//! that is an `exec_command` result printed whole (`JSON.stringify(r)`).

use std::collections::HashMap;

use serde_json::Value;

use literal::{
    ident_end, is_ident, is_ident_start, parse_expr, skip_literal, skip_regex, skip_space,
    string_literal, V,
};

mod literal;

/// How much of a cell is read (a cell is a few kilobytes; a patch written inline, more).
const MAX_CELL: usize = 512 * 1024;
/// Tool calls of one cell read, at most.
pub const MAX_CALLS: usize = 64;

/// A tool call a cell makes.
#[derive(Debug, Clone, PartialEq)]
pub struct CellCall {
    /// The tool (`exec_command`, `apply_patch`, `mcp__codex_apps__github_create_pull_request`).
    pub name: String,
    /// Its first argument as JSON, when it is a literal the reader can follow.
    pub arg: Option<Value>,
    /// Inside a loop or a callback (`for`, `while`, `.map(…)`): it may run any number of times.
    pub repeated: bool,
}

/// What a cell's output says: how the cell ended, and the parts it printed.
#[derive(Debug, Clone, PartialEq)]
pub struct CellOutput {
    pub status: CellStatus,
    /// The parts after the header, one per `text()` (merged into one when Codex cut the output).
    pub parts: Vec<String>,
    /// How long the cell ran, as its header says (`Wall time 1.2 seconds`).
    pub wall_seconds: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum CellStatus {
    Completed,
    /// Still running after its yield time: the rest comes through `wait` with this cell id.
    Running(String),
    /// The cell threw (`Script error:` follows).
    Failed,
}

/// An `exec_command` result as a part prints it: its output, exit code and session.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExecResult {
    pub output: String,
    /// Known only when the part is the whole result (`JSON.stringify(r)`) and the command ended.
    pub exit_code: Option<i64>,
    /// The command is still running in this session (`write_stdin` reads the rest).
    pub session: Option<String>,
}

/// The status and parts of a cell's output (`texts`: the output's text parts, or the one string
/// it is); `None` when it is not a cell's output.
pub fn output(texts: &[String]) -> Option<CellOutput> {
    let first = texts.first()?;
    let (head, rest) = first.split_once("\nOutput:\n").or_else(|| {
        first
            .strip_suffix("\nOutput:")
            .map(|h| (h, ""))
            .filter(|_| texts.len() == 1)
    })?;
    let status_line = head.lines().next().unwrap_or_default();
    let status = if status_line == "Script completed" {
        CellStatus::Completed
    } else if status_line == "Script failed" {
        CellStatus::Failed
    } else if let Some(id) = status_line.strip_prefix("Script running with cell ID ") {
        CellStatus::Running(id.trim().to_string())
    } else {
        return None;
    };
    let mut parts = Vec::new();
    if !rest.is_empty() {
        parts.push(rest.to_string());
    }
    parts.extend(texts[1..].iter().cloned());
    let wall_seconds = head.lines().find_map(|l| {
        l.strip_prefix("Wall time ")?
            .strip_suffix(" seconds")?
            .parse::<f64>()
            .ok()
    });
    Some(CellOutput {
        status,
        parts,
        wall_seconds,
    })
}

/// A part as an `exec_command` result: the whole result when it is one (`{"chunk_id": …,
/// "exit_code": 0, "output": …}`), else the part itself as the command's output.
pub fn exec_result(part: &str) -> ExecResult {
    let body = without_truncation_note(part);
    let trimmed = without_label(body.trim());
    if trimmed.starts_with('{') && trimmed.ends_with('}') {
        if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(trimmed) {
            let is_result = ["chunk_id", "wall_time_seconds", "exit_code", "session_id"]
                .iter()
                .any(|k| o.contains_key(*k));
            if is_result {
                let session = match o.get("session_id") {
                    Some(Value::Number(n)) => Some(n.to_string()),
                    Some(Value::String(s)) => Some(s.clone()),
                    _ => None,
                };
                return ExecResult {
                    output: o
                        .get("output")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    exit_code: o.get("exit_code").and_then(Value::as_i64),
                    session: session.filter(|_| !o.contains_key("exit_code")),
                };
            }
        }
    }
    // `if (r.session_id) text(`SESSION_ID=${r.session_id}`)`: the session, printed alone, or on
    // a line of its own before or after the output (`text(r.output + "\nSESSION_ID=" + …)`).
    let lines: Vec<&str> = body.trim().lines().collect();
    let at = match (lines.first(), lines.last()) {
        (Some(first), _) if session_line(first).is_some() => Some(0),
        (_, Some(last)) if session_line(last).is_some() => Some(lines.len() - 1),
        _ => None,
    };
    if let Some(at) = at {
        let mut rest = lines.clone();
        let id = session_line(rest.remove(at)).unwrap_or_default();
        return ExecResult {
            output: rest.join("\n"),
            session: Some(id.to_string()),
            ..ExecResult::default()
        };
    }
    ExecResult {
        output: body.to_string(),
        ..ExecResult::default()
    }
}

/// The session a line names on its own (`SESSION_ID=92491`).
fn session_line(line: &str) -> Option<&str> {
    let l = line.trim();
    l.get(..11)
        .filter(|k| k.eq_ignore_ascii_case("session_id="))
        .map(|_| &l[11..])
        .filter(|id| !id.is_empty() && id.len() <= 40 && id.bytes().all(|c| c.is_ascii_digit()))
}

/// A result printed whole after a short label of the cell's own (`---1---\n{"chunk_id": …}`,
/// `cargo test:\n{…}`): the result alone.
fn without_label(part: &str) -> &str {
    match part.split_once('\n') {
        Some((label, rest))
            if !part.starts_with('{')
                && label.len() <= 80
                && rest.trim_start().starts_with('{') =>
        {
            rest.trim()
        }
        _ => part,
    }
}

/// A part without the note Codex puts before output it cut ("Warning: truncated output
/// (original token count: N)\nTotal output lines: M\n\n").
fn without_truncation_note(part: &str) -> &str {
    if !part.starts_with("Warning: truncated output") {
        return part;
    }
    match part.split_once("\n\n") {
        Some((note, rest)) if note.lines().count() <= 2 => rest,
        _ => part,
    }
}

/// The tool calls in `cell`, in the order they appear.
pub fn calls(cell: &str) -> Vec<CellCall> {
    let mut end = cell.len().min(MAX_CELL);
    while !cell.is_char_boundary(end) {
        end -= 1;
    }
    Scanner::new(&cell[..end]).run()
}

/// What an open bracket holds.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Plain,
    /// A `for (…)` or `while (…)` header: runs once for `for…of`, so not counted as a loop.
    LoopHeader,
    /// A loop's body, or a callback's arguments (`.map(…)`, `.forEach(…)`): may run many times.
    Repeated,
}

struct Frame {
    close: u8,
    kind: Kind,
}

struct Scanner<'a> {
    s: &'a str,
    b: &'a [u8],
    /// `const`/`let`/`var` names bound to a literal (`None`: bound twice, or to anything else).
    vars: HashMap<String, Option<Value>>,
    stack: Vec<Frame>,
    /// What the next `(` opens.
    next_paren: Kind,
    /// A loop's header just closed (or `do` was seen): its body comes next.
    loop_body: bool,
    /// A loop body without braces, at this depth: runs until the end of its statement.
    loop_statement: Option<usize>,
    /// The last significant character before the current position (for `/` and `.`).
    prev: u8,
    out: Vec<CellCall>,
}

/// Methods whose function argument may run many times.
const CALLBACKS: &[&str] = &[
    "map", "forEach", "flatMap", "filter", "reduce", "some", "every", "find", "then",
];

impl<'a> Scanner<'a> {
    fn new(s: &'a str) -> Scanner<'a> {
        Scanner {
            s,
            b: s.as_bytes(),
            vars: HashMap::new(),
            stack: Vec::new(),
            next_paren: Kind::Plain,
            loop_body: false,
            loop_statement: None,
            prev: b';',
            out: Vec::new(),
        }
    }

    fn repeated(&self) -> bool {
        self.loop_statement.is_some() || self.stack.iter().any(|f| f.kind == Kind::Repeated)
    }

    fn run(mut self) -> Vec<CellCall> {
        let mut i = 0;
        while i < self.b.len() && self.out.len() < MAX_CALLS {
            let c = self.b[i];
            if c.is_ascii_whitespace() && c != b'\n' {
                i += 1;
                continue;
            }
            if self.loop_body && c != b'\n' {
                self.loop_body = false;
                if c != b'{' {
                    self.loop_statement = Some(self.stack.len());
                }
            }
            match c {
                b'"' | b'\'' | b'`' => {
                    i = skip_literal(self.b, i);
                    self.prev = b'"';
                    continue;
                }
                b'/' if self.b.get(i + 1) == Some(&b'/') => {
                    i = memchr::memchr(b'\n', &self.b[i..]).map_or(self.b.len(), |n| i + n);
                    continue;
                }
                b'/' if self.b.get(i + 1) == Some(&b'*') => {
                    i = memchr::memmem::find(&self.b[i + 2..], b"*/")
                        .map_or(self.b.len(), |n| i + 2 + n + 2);
                    continue;
                }
                b'/' if b"(,=:[!&|?{};+-*%<>~^".contains(&self.prev) => {
                    i = skip_regex(self.b, i);
                    self.prev = b'"';
                    continue;
                }
                b'(' | b'[' | b'{' => {
                    let kind = if c == b'(' {
                        std::mem::replace(&mut self.next_paren, Kind::Plain)
                    } else if c == b'{' && self.prev == 0 {
                        // `prev == 0` marks a loop header just closed or `do`.
                        Kind::Repeated
                    } else {
                        Kind::Plain
                    };
                    let close = match c {
                        b'(' => b')',
                        b'[' => b']',
                        _ => b'}',
                    };
                    self.stack.push(Frame { close, kind });
                }
                b')' | b']' | b'}' => {
                    if let Some(at) = self.stack.iter().rposition(|f| f.close == c) {
                        let kind = self.stack[at].kind;
                        self.stack.truncate(at);
                        if kind == Kind::LoopHeader {
                            self.loop_body = true;
                            self.prev = 0;
                            i += 1;
                            continue;
                        }
                    }
                    if self.loop_statement.is_some_and(|d| self.stack.len() < d) {
                        self.loop_statement = None;
                    }
                }
                // A statement goes on past a newline after an operator or an open call.
                b';' | b'\n'
                    if self.loop_statement == Some(self.stack.len())
                        && (c == b';' || !b"(,=+.&|?:".contains(&self.prev)) =>
                {
                    self.loop_statement = None;
                }
                _ if is_ident_start(c) && (i == 0 || !is_ident(self.b[i - 1])) => {
                    i = self.word(i);
                    continue;
                }
                _ => {}
            }
            if c != b'\n' {
                self.prev = c;
            }
            i += 1;
        }
        self.out
    }

    /// The identifier at `i`: a tool call, a loop keyword, a callback method, a declaration.
    /// Returns where scanning goes on.
    fn word(&mut self, i: usize) -> usize {
        let end = ident_end(self.b, i);
        let word = &self.s[i..end];
        let after_dot = self.prev == b'.';
        self.prev = b'a';
        match word {
            "tools" if !after_dot => {
                if let Some((name, open)) = tool_name(self.s, end) {
                    let arg = match parse_expr(self.s, open + 1, &self.vars, 0) {
                        Some((V::Known(v), _)) => Some(v),
                        _ => None,
                    };
                    self.out.push(CellCall {
                        name,
                        arg,
                        repeated: self.repeated(),
                    });
                }
            }
            "for" | "while" if !after_dot => self.next_paren = Kind::LoopHeader,
            "do" if !after_dot => self.prev = 0,
            "const" | "let" | "var" if !after_dot => self.declaration(end),
            w if after_dot && CALLBACKS.contains(&w) => self.next_paren = Kind::Repeated,
            _ => {}
        }
        end
    }

    /// `const NAME = <literal>`: remembered when the literal can be read.
    fn declaration(&mut self, at: usize) {
        let i = skip_space(self.b, at);
        if !self.b.get(i).is_some_and(|c| is_ident_start(*c)) {
            return;
        }
        let end = ident_end(self.b, i);
        let name = &self.s[i..end];
        let eq = skip_space(self.b, end);
        if self.b.get(eq) != Some(&b'=') || self.b.get(eq + 1) == Some(&b'=') {
            return;
        }
        let value = match parse_expr(self.s, eq + 1, &self.vars, 0) {
            Some((V::Known(v), _)) => Some(v),
            _ => None,
        };
        let value = if self.vars.contains_key(name) {
            None
        } else {
            value
        };
        self.vars.insert(name.to_string(), value);
    }
}

/// After `tools`: `.name(`, `?.name(` or `["name"](`; the name and where its `(` is.
fn tool_name(s: &str, at: usize) -> Option<(String, usize)> {
    let b = s.as_bytes();
    let mut i = skip_space(b, at);
    if b.get(i) == Some(&b'?') && b.get(i + 1) == Some(&b'.') {
        i += 1;
    }
    let name = match b.get(i)? {
        b'.' => {
            let start = skip_space(b, i + 1);
            if !is_ident_start(*b.get(start)?) {
                return None;
            }
            let end = ident_end(b, start);
            i = end;
            s[start..end].to_string()
        }
        b'[' => {
            let start = skip_space(b, i + 1);
            if !matches!(b.get(start), Some(b'"' | b'\'')) {
                return None;
            }
            let (value, end) = string_literal(s, start)?;
            let close = skip_space(b, end);
            (b.get(close) == Some(&b']')).then_some(())?;
            i = close + 1;
            value
        }
        _ => return None,
    };
    let open = skip_space(b, i);
    (b.get(open) == Some(&b'(') && !name.is_empty() && name.len() <= 128).then_some((name, open))
}

#[cfg(test)]
mod tests;
