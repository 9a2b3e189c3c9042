//! Paths as the client's own code spells them: Node's `path.normalize`, and the one setting that
//! names a folder ctxguard then reads, `autoMemoryDirectory`, accepted exactly when the client
//! accepts it. A value the client refuses leaves it on its default folder; taking it anyway
//! would have ctxguard show as saved memories files the client never wrote there (`~/.` made
//! the whole home directory the memory folder).

use std::path::{Path, PathBuf};

/// The separator Node's `path` uses here (`path.sep`).
const SEP: char = std::path::MAIN_SEPARATOR;

fn is_sep(c: char) -> bool {
    c == '/' || (cfg!(windows) && c == '\\')
}

/// Node's `path.normalize` on this platform: `.` segments and repeated separators go, `..` takes
/// the segment before it (above the root it is dropped from an absolute path and kept in a
/// relative one), a trailing separator stays, and an empty result is `.`. On Windows the
/// separators become `\`, and a drive (`C:`) or a UNC share (`\\server\share`) leads.
fn normalize(path: &str) -> String {
    if path.is_empty() {
        return ".".to_string();
    }
    let (device, rest) = split_device(path);
    let absolute = rest.starts_with(is_sep);
    let trailing = rest.ends_with(is_sep);
    let mut parts: Vec<&str> = Vec::new();
    for part in rest.split(is_sep) {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            _ => parts.push(part),
        }
    }
    let mut tail = parts.join(&SEP.to_string());
    if tail.is_empty() && !absolute {
        tail.push('.');
    }
    if !tail.is_empty() && trailing {
        tail.push(SEP);
    }
    let root = if absolute {
        SEP.to_string()
    } else {
        String::new()
    };
    format!("{device}{root}{tail}")
}

/// The device a Windows path starts with (a drive `C:`, or `\\server\share` of a UNC path, with
/// `\` separators), and the rest; elsewhere no device.
fn split_device(path: &str) -> (String, &str) {
    if !cfg!(windows) {
        return (String::new(), path);
    }
    let bytes = path.as_bytes();
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        return (path[..2].to_string(), &path[2..]);
    }
    let mut chars = path.chars();
    if chars.next().is_some_and(is_sep) && chars.next().is_some_and(is_sep) {
        // `\\server\share`, then the rest (which starts with a separator, or is empty).
        let body = &path[2..];
        let mut parts = body.splitn(3, is_sep);
        if let (Some(server), Some(share)) = (parts.next(), parts.next()) {
            if !server.is_empty() && !share.is_empty() {
                let used = 2 + server.len() + 1 + share.len();
                return (format!(r"\\{server}\{share}"), &path[used..]);
            }
        }
    }
    (String::new(), path)
}

/// Node's `path.isAbsolute` on this platform.
fn is_absolute(path: &str) -> bool {
    if cfg!(windows) {
        let (device, rest) = split_device(path);
        rest.starts_with(is_sep) || (device.starts_with(r"\\") && rest.is_empty())
    } else {
        path.starts_with('/')
    }
}

/// `autoMemoryDirectory` as the client takes it, or `None` where it refuses the value (and keeps
/// its default folder). Read from its code (the same in 2.1.330 and 2.1.332):
/// - an empty value is no value;
/// - `~/` or `~\` and a rest: the rest, normalised (`.` when empty), may not be `.` or `..`, nor
///   begin with `..` and a separator; the value is then the home directory joined with the rest
///   (so `~/.`, `~/a/..` and `~/../x` are refused, while `~//` is the home directory itself);
/// - the value normalised, its trailing separators (`/` and `\`) removed, must be absolute,
///   at least 3 UTF-16 code units long, not a drive alone (`C:`), and hold no NUL; one more
///   check there names a function the carved code does not resolve, and is taken as refusing a
///   network (UNC) path, which only Windows has;
/// - the client also makes the result NFC, which no path ctxguard compares it with needs.
pub fn memory_directory(value: &str, home: Option<&Path>) -> Option<PathBuf> {
    if value.is_empty() {
        return None;
    }
    let mut path = value.to_string();
    if let Some(rest) = value
        .strip_prefix("~/")
        .or_else(|| value.strip_prefix("~\\"))
    {
        let rest_normal = normalize(if rest.is_empty() { "." } else { rest });
        let escapes = rest_normal == "."
            || rest_normal == ".."
            || rest_normal.starts_with(&format!("..{SEP}"))
            || rest_normal.starts_with("../")
            || rest_normal.starts_with("..\\");
        if escapes {
            return None;
        }
        // `path.join(home, rest)`: the two with a separator between, normalised below.
        path = format!("{}{SEP}{rest}", home?.display());
    }
    let normal = normalize(&path);
    let normal = normal.trim_end_matches(['/', '\\']);
    let drive_alone = normal.len() == 2
        && normal.as_bytes()[0].is_ascii_alphabetic()
        && normal.as_bytes()[1] == b':';
    let unc = cfg!(windows) && normal.starts_with(r"\\");
    let refused = !is_absolute(normal)
        || normal.encode_utf16().count() < 3
        || drive_alone
        || unc
        || normal.contains('\0');
    (!refused).then(|| PathBuf::from(normal))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn normalize_is_nodes() {
        // What `node -e 'console.log(path.posix.normalize(x))'` prints for each.
        for (input, node) in [
            ("", "."),
            (".", "."),
            ("./", "./"),
            ("..", ".."),
            ("../", "../"),
            ("a/..", "."),
            ("a/../..", ".."),
            ("a/../../b/", "../b/"),
            ("/", "/"),
            ("//", "/"),
            ("/..", "/"),
            ("/../a", "/a"),
            ("/a//b/./c/", "/a/b/c/"),
            ("/a/b/../../..", "/"),
            ("~/x", "~/x"),
            ("a\\b", "a\\b"),
        ] {
            assert_eq!(normalize(input), node, "{input:?}");
        }
    }

    #[test]
    #[cfg(unix)]
    fn the_memory_directory_is_what_the_client_accepts() {
        let home = Path::new("/home/u");
        let dir = |v: &str| memory_directory(v, Some(home));
        let accepted = [
            ("~/notes/mem", "/home/u/notes/mem"),
            ("~/notes/mem/", "/home/u/notes/mem"),
            ("~\\notes", "/home/u/notes"),
            ("~/a/../b", "/home/u/b"),
            ("~/..x", "/home/u/..x"),
            // The rest (`/`, `./`) normalised is neither `.` nor `..`: the client takes the
            // home directory itself, and with `/..` its parent (node agrees, see below).
            ("~//", "/home/u"),
            ("~/./", "/home/u"),
            ("~//..", "/home"),
            ("/srv/mem", "/srv/mem"),
            ("/srv//mem/./", "/srv/mem"),
            ("/srv/mem\\", "/srv/mem"),
            ("/ab", "/ab"),
            ("/😀", "/😀"),
        ];
        for (value, path) in accepted {
            assert_eq!(dir(value), Some(PathBuf::from(path)), "{value:?}");
        }
        let refused = [
            "",
            "~/.",
            "~/",
            "~",
            "~/..",
            "~/../x",
            "~/a/..",
            "~/a/../..",
            "/",
            "//",
            "/a",
            "/a/",
            "/..",
            "/../..",
            "relative/mem",
            ".claude/mem",
            "ab",
            " /srv/mem",
            "  ~/  ",
            "~user/mem",
            "/srv/\0mem",
        ];
        for value in refused {
            assert_eq!(dir(value), None, "{value:?}");
        }
        // No home directory: nothing under it.
        assert_eq!(memory_directory("~/notes", None), None);
        assert_eq!(
            memory_directory("/srv/mem", None),
            Some(PathBuf::from("/srv/mem"))
        );
    }

    #[test]
    #[cfg(windows)]
    fn the_memory_directory_is_what_the_client_accepts_on_windows() {
        let home = Path::new(r"C:\Users\u");
        let dir = |v: &str| memory_directory(v, Some(home));
        assert_eq!(
            dir("~/notes/mem"),
            Some(PathBuf::from(r"C:\Users\u\notes\mem"))
        );
        assert_eq!(dir(r"D:\mem\"), Some(PathBuf::from(r"D:\mem")));
        for value in [
            "~/.",
            r"~\..",
            "C:",
            r"C:\",
            "C:mem",
            r"\\server\share\mem",
            "mem",
        ] {
            assert_eq!(dir(value), None, "{value:?}");
        }
    }

    /// Values generated from the pieces paths are made of.
    fn generated_values(n: usize) -> Vec<String> {
        let pieces = [
            "~", "/", "\\", ".", "..", "a", "é", "😀", "C:", "\0", " ", "~/", "//", "x/..", "ab",
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        (0..n)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (0..seed % 7)
                    .map(|i| pieces[(seed >> (8 * i + 3)) as usize % pieces.len()])
                    .collect()
            })
            .collect()
    }

    /// Nothing panics, and whatever comes back is absolute (not always normal: the client cuts
    /// trailing separators after normalising, so `~/.\\` is `$HOME/.`, as it is for the client).
    #[test]
    fn generated_values_never_panic_and_give_absolute_paths() {
        let home = if cfg!(windows) {
            Path::new(r"C:\Users\u")
        } else {
            Path::new("/home/u")
        };
        for value in generated_values(20_000) {
            if let Some(dir) = memory_directory(&value, Some(home)) {
                let text = dir.to_str().unwrap();
                assert!(is_absolute(text), "{value:?} → {text:?}");
                assert!(!text.contains('\0'));
            }
        }
    }

    /// The same generated values through the client's own code (a copy of its function, in
    /// fixtures/client-code/), under node when there is one: the same answer for every value.
    #[test]
    #[cfg(unix)]
    fn generated_values_get_the_clients_own_answer() {
        use std::io::Write;
        use std::process::{Command, Stdio};
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/client-code/auto-memory-directory.js");
        let home = Path::new("/home/u");
        let values = generated_values(5_000);
        let child = Command::new("node")
            .arg(&script)
            .arg(home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn();
        let Ok(mut child) = child else {
            eprintln!("skipped: no node on PATH to run the client's own rule");
            return;
        };
        let input: String = values
            .iter()
            .map(|v| serde_json::to_string(v).unwrap() + "\n")
            .collect();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let answers: Vec<Option<String>> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(answers.len(), values.len());
        for (value, client) in values.iter().zip(answers) {
            let ours = memory_directory(value, Some(home)).map(|p| p.display().to_string());
            assert_eq!(ours, client, "{value:?}");
        }
    }
}
