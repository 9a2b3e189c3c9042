//! JavaScript literals as a code-mode cell writes a tool's argument: objects with quoted or
//! bare keys, arrays, strings in any quotes with JavaScript's escapes, templates (`String.raw`
//! too) whose `${…}` name a known `const`, strings joined by `+`. Everything else is
//! [`V::Unknown`], skipped to where it ends; what cannot even be skipped is `None`.

// A scanner's conventional short names: `s` the text, `b` its bytes, `i`, `j` positions.
#![allow(clippy::many_single_char_names)]

use std::collections::HashMap;

use serde_json::{Map, Value};

/// How deep an argument's objects and arrays are read.
const MAX_DEPTH: usize = 16;

/// An expression's value: known, or an expression the reader skipped.
pub(super) enum V {
    Known(Value),
    Unknown,
}

pub(super) fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
}

pub(super) fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b'$'
}

pub(super) fn ident_end(b: &[u8], i: usize) -> usize {
    let mut j = i;
    while j < b.len() && is_ident(b[j]) {
        j += 1;
    }
    j
}

/// Past spaces, newlines and comments from `i`.
pub(super) fn skip_space(b: &[u8], mut i: usize) -> usize {
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if b.get(i) == Some(&b'/') && b.get(i + 1) == Some(&b'/') {
            i = memchr::memchr(b'\n', &b[i..]).map_or(b.len(), |n| i + n);
        } else if b.get(i) == Some(&b'/') && b.get(i + 1) == Some(&b'*') {
            i = memchr::memmem::find(&b[i + 2..], b"*/").map_or(b.len(), |n| i + 2 + n + 2);
        } else {
            return i;
        }
    }
}

/// Past the string or template literal starting at `i` (its quote), wherever it ends.
pub(super) fn skip_literal(b: &[u8], i: usize) -> usize {
    let quote = b[i];
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            c if c == quote => return j + 1,
            b'\n' if quote != b'`' => return j,
            b'$' if quote == b'`' && b.get(j + 1) == Some(&b'{') => {
                j = skip_balanced(b, j + 1);
            }
            _ => j += 1,
        }
    }
    b.len()
}

/// Past the bracketed group starting at `i` (its opening bracket), strings inside skipped.
fn skip_balanced(b: &[u8], i: usize) -> usize {
    let mut depth = 0usize;
    let mut j = i;
    while j < b.len() {
        match b[j] {
            b'"' | b'\'' | b'`' => {
                j = skip_literal(b, j);
                continue;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    b.len()
}

/// Past a regular expression literal starting at `i` (its `/`).
pub(super) fn skip_regex(b: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    let mut class = false;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 1,
            b'[' => class = true,
            b']' => class = false,
            b'/' if !class => {
                j += 1;
                return ident_end(b, j);
            }
            b'\n' => return j,
            _ => {}
        }
        j += 1;
    }
    b.len()
}

/// Past one expression from `i`: up to the `,` or closing bracket that ends it.
fn skip_expr(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' | b'`' => i = skip_literal(b, i),
            b'(' | b'[' | b'{' => i = skip_balanced(b, i),
            b',' | b')' | b']' | b'}' | b';' => return i,
            _ => i += 1,
        }
    }
    i
}

/// The expression at `i`: a literal, or strings joined with `+`. `None` when even its end
/// cannot be found; [`V::Unknown`] for an expression that is not a literal.
pub(super) fn parse_expr(
    s: &str,
    i: usize,
    vars: &HashMap<String, Option<Value>>,
    depth: usize,
) -> Option<(V, usize)> {
    let b = s.as_bytes();
    let start = skip_space(b, i);
    let (mut value, mut end) = match parse_value(s, start, vars, depth) {
        Some(found) => found,
        None => (V::Unknown, skip_expr(b, start)),
    };
    loop {
        let next = skip_space(b, end);
        match b.get(next) {
            None | Some(b',' | b')' | b']' | b'}' | b';' | b'\n') => return Some((value, next)),
            Some(b'+') if b.get(next + 1) != Some(&b'+') && b.get(next + 1) != Some(&b'=') => {
                let at = skip_space(b, next + 1);
                let (right, after) = match parse_value(s, at, vars, depth) {
                    Some(found) => found,
                    None => (V::Unknown, skip_expr(b, at)),
                };
                value = match (value, right) {
                    (V::Known(Value::String(l)), V::Known(r)) => {
                        V::Known(Value::String(l + &scalar(&r).unwrap_or_default()))
                    }
                    (V::Known(l), V::Known(Value::String(r))) if scalar(&l).is_some() => {
                        V::Known(Value::String(scalar(&l).unwrap_or_default() + &r))
                    }
                    _ => V::Unknown,
                };
                end = after;
            }
            Some(_) => return Some((V::Unknown, skip_expr(b, next))),
        }
    }
}

/// A string or a number as text, for `+`.
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The literal at `i` (spaces already skipped): `None` when it is not one.
fn parse_value(
    s: &str,
    i: usize,
    vars: &HashMap<String, Option<Value>>,
    depth: usize,
) -> Option<(V, usize)> {
    let b = s.as_bytes();
    if depth > MAX_DEPTH {
        return None;
    }
    match *b.get(i)? {
        b'"' | b'\'' => string_literal(s, i).map(|(v, e)| (V::Known(Value::String(v)), e)),
        b'`' => template(s, i, false, vars),
        b'{' => object(s, i, vars, depth),
        b'[' => array(s, i, vars, depth),
        b'-' | b'0'..=b'9' => {
            let mut j = i + 1;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'.' || b[j] == b'_') {
                j += 1;
            }
            let text = s[i..j].replace('_', "");
            let n = serde_json::from_str::<serde_json::Number>(&text).ok()?;
            Some((V::Known(Value::Number(n)), j))
        }
        c if is_ident_start(c) => {
            let end = ident_end(b, i);
            let word = &s[i..end];
            let known = |v| Some((V::Known(v), end));
            match word {
                "true" => known(Value::Bool(true)),
                "false" => known(Value::Bool(false)),
                "null" | "undefined" => known(Value::Null),
                "String" if s[end..].starts_with(".raw`") => template(s, end + 4, true, vars),
                _ => {
                    // A name followed by `.`, `(` or `[` is a member or a call, not the name.
                    let next = skip_space(b, end);
                    if matches!(b.get(next), Some(b'.' | b'(' | b'[' | b'?')) {
                        return None;
                    }
                    match vars.get(word) {
                        Some(Some(v)) => known(v.clone()),
                        _ => Some((V::Unknown, end)),
                    }
                }
            }
        }
        _ => None,
    }
}

/// `{key: value, "key": value, key}`: a value the reader cannot follow is `null` (its key is
/// kept, so a missing `cmd` is told from an unknown one); a spread makes the object unknown.
fn object(
    s: &str,
    i: usize,
    vars: &HashMap<String, Option<Value>>,
    depth: usize,
) -> Option<(V, usize)> {
    let b = s.as_bytes();
    let mut map = Map::new();
    let mut j = skip_space(b, i + 1);
    let mut unknown = false;
    loop {
        match *b.get(j)? {
            b'}' => break,
            b'.' if s[j..].starts_with("...") => {
                unknown = true;
                j = skip_expr(b, j);
            }
            c => {
                let (key, after) = if c == b'"' || c == b'\'' {
                    string_literal(s, j)?
                } else if is_ident(c) {
                    let end = ident_end(b, j);
                    (s[j..end].to_string(), end)
                } else {
                    return None;
                };
                let k = skip_space(b, after);
                let (value, end) = match b.get(k) {
                    Some(b':') => match parse_expr(s, k + 1, vars, depth + 1)? {
                        (V::Known(v), e) => (v, e),
                        (V::Unknown, e) => (Value::Null, e),
                    },
                    // Shorthand `{cmd}`.
                    Some(b',' | b'}') => {
                        (vars.get(&key).cloned().flatten().unwrap_or(Value::Null), k)
                    }
                    _ => return None,
                };
                map.insert(key, value);
                j = end;
            }
        }
        j = skip_space(b, j);
        match *b.get(j)? {
            b',' => j = skip_space(b, j + 1),
            b'}' => break,
            _ => return None,
        }
    }
    let value = if unknown {
        V::Unknown
    } else {
        V::Known(Value::Object(map))
    };
    Some((value, j + 1))
}

/// `[a, b, c]`: unknown when any element is.
fn array(
    s: &str,
    i: usize,
    vars: &HashMap<String, Option<Value>>,
    depth: usize,
) -> Option<(V, usize)> {
    let b = s.as_bytes();
    let mut items = Vec::new();
    let mut unknown = false;
    let mut j = skip_space(b, i + 1);
    loop {
        if *b.get(j)? == b']' {
            break;
        }
        match parse_expr(s, j, vars, depth + 1)? {
            (V::Known(v), e) => {
                items.push(v);
                j = e;
            }
            (V::Unknown, e) => {
                unknown = true;
                j = e;
            }
        }
        j = skip_space(b, j);
        match *b.get(j)? {
            b',' => j = skip_space(b, j + 1),
            b']' => break,
            _ => return None,
        }
    }
    let value = if unknown {
        V::Unknown
    } else {
        V::Known(Value::Array(items))
    };
    Some((value, j + 1))
}

/// A `"…"` or `'…'` string at `i`, unescaped as JavaScript does, and where it ends.
pub(super) fn string_literal(s: &str, i: usize) -> Option<(String, usize)> {
    let b = s.as_bytes();
    let quote = *b.get(i)?;
    let mut out = String::new();
    let mut j = i + 1;
    loop {
        let rest = &s[j..];
        let stop = rest.find([quote as char, '\\', '\n'])?;
        out.push_str(&rest[..stop]);
        j += stop;
        match b[j] {
            b'\\' => j = unescape(s, j, &mut out)?,
            b'\n' => return None,
            _ => return Some((out, j + 1)),
        }
    }
}

/// A template literal at `i` (its backtick): its text when every `${…}` in it names a `const`
/// holding a string or a number, else unknown. `raw` (`String.raw`): backslashes stay as written.
fn template(
    s: &str,
    i: usize,
    raw: bool,
    vars: &HashMap<String, Option<Value>>,
) -> Option<(V, usize)> {
    let b = s.as_bytes();
    let mut out = String::new();
    let mut j = i + 1;
    loop {
        let rest = &s[j..];
        let stop = rest.find(['`', '\\', '$'])?;
        out.push_str(&rest[..stop]);
        j += stop;
        match b[j] {
            b'\\' if raw => {
                let next = s[j + 1..].chars().next()?;
                out.push('\\');
                out.push(next);
                j += 1 + next.len_utf8();
            }
            b'\\' => j = unescape(s, j, &mut out)?,
            b'$' if b.get(j + 1) == Some(&b'{') => {
                let start = skip_space(b, j + 2);
                let end = ident_end(b, start);
                let close = skip_space(b, end);
                let known = (end > start && b.get(close) == Some(&b'}'))
                    .then(|| vars.get(&s[start..end]))
                    .flatten()
                    .and_then(|v| v.as_ref().and_then(scalar));
                match known {
                    Some(text) => {
                        out.push_str(&text);
                        j = close + 1;
                    }
                    None => return Some((V::Unknown, skip_literal(b, i))),
                }
            }
            b'$' => {
                out.push('$');
                j += 1;
            }
            _ => {
                // Template text keeps CRLF as LF, as JavaScript does.
                return Some((V::Known(Value::String(out.replace("\r\n", "\n"))), j + 1));
            }
        }
    }
}

/// The escape at `j` (its backslash) appended to `out`; where the text goes on.
fn unescape(s: &str, j: usize, out: &mut String) -> Option<usize> {
    let c = s[j + 1..].chars().next()?;
    let hex = |from: usize, n: usize| -> Option<u32> {
        let h = s.get(from..from + n)?;
        h.chars()
            .all(|c| c.is_ascii_hexdigit())
            .then(|| u32::from_str_radix(h, 16).ok())
            .flatten()
    };
    let at = j + 1;
    Some(match c {
        'n' => {
            out.push('\n');
            at + 1
        }
        't' => {
            out.push('\t');
            at + 1
        }
        'r' => {
            out.push('\r');
            at + 1
        }
        'b' => {
            out.push('\u{8}');
            at + 1
        }
        'f' => {
            out.push('\u{c}');
            at + 1
        }
        'v' => {
            out.push('\u{b}');
            at + 1
        }
        '0' if !s[at + 1..].starts_with(|c: char| c.is_ascii_digit()) => {
            out.push('\0');
            at + 1
        }
        'x' => {
            out.push(char::from_u32(hex(at + 1, 2)?)?);
            at + 3
        }
        'u' if s[at + 1..].starts_with('{') => {
            let close = s[at + 2..].find('}')?;
            let code = u32::from_str_radix(&s[at + 2..at + 2 + close], 16).ok()?;
            out.push(char::from_u32(code)?);
            at + 3 + close
        }
        'u' => {
            let unit = hex(at + 1, 4)?;
            if (0xD800..0xDC00).contains(&unit) && s[at + 5..].starts_with("\\u") {
                let low = hex(at + 7, 4)?;
                let code = 0x10000 + ((unit - 0xD800) << 10) + (low.checked_sub(0xDC00)?);
                out.push(char::from_u32(code)?);
                at + 11
            } else {
                out.push(char::from_u32(unit).unwrap_or('\u{fffd}'));
                at + 5
            }
        }
        // A line continuation.
        '\n' => at + 1,
        other => {
            out.push(other);
            at + other.len_utf8()
        }
    })
}
