//! `install --client pi` and `uninstall --client pi`: ctxguard's extension for pi (the coding
//! agent) in the folder pi discovers extensions in, `$PI_CODING_AGENT_DIR/extensions/ctxguard.ts`
//! (default `~/.pi/agent`). pi has no command hooks: the extension (`pi/ctxguard.ts`, carried in
//! the binary) turns pi's events into calls of this binary, whose absolute path install writes
//! into the copy. No file of pi's is edited: discovery needs none.
//!
//! The copy begins with a header saying ctxguard wrote it, and which folders install created for
//! it; uninstall removes the file only when that header is there (a file of the same name the
//! user wrote is never overwritten nor removed), then those folders when they are empty.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

use super::{this_binary, SettingsTarget};
use crate::config::Env;
use crate::files;

/// The extension, as the npm package ships it: the binary's path still a placeholder.
const EXTENSION: &str = include_str!("../../../pi/ctxguard.ts");

/// The placeholder install replaces with the binary's path (a JSON string is a TypeScript one).
const PLACEHOLDER: &str = "\"@@CTXGUARD_BIN@@\"";

/// The first line of every copy install writes: how uninstall knows the file is ctxguard's.
const HEADER: &str =
    "// Written by `ctxguard install --client pi`; `ctxguard uninstall --client pi` removes it.";

/// The header line naming a folder install created for the file (uninstall removes it if empty).
const CREATED: &str = "// ctxguard created: ";

/// No more of an existing `ctxguard.ts` is read (the extension is about 10 kB).
const MAX_EXTENSION_BYTES: u64 = 1024 * 1024;

/// The file name in pi's extensions folder.
const FILE_NAME: &str = "ctxguard.ts";

/// Where pi discovers global extensions, and where ctxguard's goes.
pub fn extension_path(agent_dir: &Path) -> PathBuf {
    agent_dir.join("extensions").join(FILE_NAME)
}

/// The copy install writes for `bin`, recording the folders it `created`.
pub fn render(bin: &str, created: &[PathBuf]) -> Result<String> {
    if !EXTENSION.contains(PLACEHOLDER) {
        bail!("the extension carried in this binary has no placeholder for its path");
    }
    let quoted = serde_json::to_string(bin).context("encoding the binary's path")?;
    let mut out = format!("{HEADER}\n");
    for dir in created {
        let dir = dir
            .to_str()
            .ok_or_else(|| anyhow!("the folder {} is not UTF-8", dir.display()))?;
        out.push_str(&format!("{CREATED}{dir}\n"));
    }
    out.push_str(&EXTENSION.replacen(PLACEHOLDER, &quoted, 1));
    Ok(out)
}

/// What is at the extension's path now.
#[derive(Debug, PartialEq)]
pub enum Existing {
    None,
    /// A copy ctxguard wrote: its text, and the folders its header says install created.
    Ours(String, Vec<PathBuf>),
    /// Something else: a file of the user's, a link, a folder; what it is.
    Theirs(&'static str),
}

/// The header of a copy: the folders it names, or `None` when the text is no copy of ctxguard's.
fn header_of(text: &str) -> Option<Vec<PathBuf>> {
    let mut lines = text.lines();
    if lines.next()? != HEADER {
        return None;
    }
    Some(
        lines
            .map_while(|l| l.strip_prefix(CREATED))
            .map(PathBuf::from)
            .collect(),
    )
}

/// The binary path a copy runs (the value install wrote), if it names one.
pub fn binary_in(text: &str) -> Option<String> {
    let line = text
        .lines()
        .find(|l| l.starts_with("const INSTALLED_BIN: string = "))?;
    let literal = line
        .strip_prefix("const INSTALLED_BIN: string = ")?
        .strip_suffix(';')?;
    let bin: String = serde_json::from_str(literal).ok()?;
    (!bin.starts_with("@@")).then_some(bin)
}

/// What is at `path`, read only when it is a regular file (a link is never followed).
pub fn existing(path: &Path) -> Result<Existing> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Existing::None),
        Err(e) => return Err(e).with_context(|| format!("looking at {}", path.display())),
    };
    if meta.file_type().is_symlink() {
        return Ok(Existing::Theirs("a symbolic link"));
    }
    if !meta.is_file() {
        return Ok(Existing::Theirs("not a regular file"));
    }
    let Some(bytes) = files::read_nofollow(path, "pi's extension", MAX_EXTENSION_BYTES)? else {
        return Ok(Existing::None);
    };
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Ok(match header_of(&text) {
        Some(created) => Existing::Ours(text, created),
        None => Existing::Theirs("a file ctxguard did not write"),
    })
}

/// pi's agent directory, as found, and how.
fn locate(env: &Env) -> Result<(PathBuf, &'static str)> {
    let dir = crate::pi::config::agent_dir_of(env).ok_or_else(|| {
        anyhow!("cannot find pi's agent directory: set PI_CODING_AGENT_DIR (or HOME)")
    })?;
    let from = if env.pi_agent_dir_var.is_some() {
        "PI_CODING_AGENT_DIR"
    } else {
        "the default, without PI_CODING_AGENT_DIR"
    };
    Ok((dir, from))
}

/// The folders `create_dir_all(dir)` would create, outermost first.
fn missing_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && fs::symlink_metadata(d).is_err())
        .map(Path::to_path_buf)
        .collect();
    out.reverse();
    out
}

fn refuse_theirs(path: &Path, what: &str) -> anyhow::Error {
    anyhow!(
        "{} is {what}: ctxguard never overwrites it. Move it away (or rename it) and run \
         `ctxguard install --client pi` again; pi loads every .ts file of that folder, so it \
         may keep another name there",
        path.display()
    )
}

/// The flags of the other clients, refused for pi (which has a folder of its own and no version
/// to register for).
pub(super) fn refuse_flags(
    target: &SettingsTarget,
    client_version: Option<&str>,
    trust: bool,
) -> Result<()> {
    if target.settings.is_some() || target.project {
        bail!(
            "--settings and --project name Claude Code's settings; pi's extension goes to \
             $PI_CODING_AGENT_DIR/extensions/ (default ~/.pi/agent)"
        );
    }
    if client_version.is_some() {
        bail!("--client-version is Claude Code's; pi takes the same extension in every version");
    }
    if trust {
        bail!(
            "--trust is for --client codex: pi loads the extensions of its folder without asking"
        );
    }
    Ok(())
}

pub fn install(dry_run: bool) -> Result<()> {
    let env = Env::from_process();
    let (agent, from) = locate(&env)?;
    let path = extension_path(&agent);
    println!("pi: {} ({from})", agent.display());
    let (bin, _) = this_binary(&env)?;
    let (old, created) = match existing(&path)? {
        Existing::Theirs(what) => return Err(refuse_theirs(&path, what)),
        Existing::Ours(text, created) => (Some(text), created),
        Existing::None => (None, missing_dirs(path.parent().unwrap_or(&agent))),
    };
    let new = render(&bin, &created)?;
    if old.as_deref() == Some(new.as_str()) {
        println!(
            "ctxguard's extension is already in {} (nothing changed)",
            path.display()
        );
        return Ok(());
    }
    let verb = match (&old, dry_run) {
        (None, true) => "would write",
        (None, false) => "wrote",
        (Some(_), true) => "would update",
        (Some(_), false) => "updated",
    };
    if !dry_run {
        let dir = path.parent().unwrap_or(&agent);
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        files::replace_with_mode(&path, new.as_bytes(), 0o644)
            .with_context(|| format!("writing pi's extension {}", path.display()))?;
    }
    println!("{verb} {}: it runs {bin}", path.display());
    for dir in created.iter().filter(|_| old.is_none()) {
        println!(
            "  (created {}: uninstall removes it when empty)",
            dir.display()
        );
    }
    if dry_run {
        println!("(dry run: nothing written)");
    } else {
        println!(
            "pi loads it at its next start (or /reload); `ctxguard doctor --client pi` checks it"
        );
    }
    Ok(())
}

pub fn uninstall(dry_run: bool) -> Result<()> {
    let env = Env::from_process();
    let (agent, from) = locate(&env)?;
    let path = extension_path(&agent);
    println!("pi: {} ({from})", agent.display());
    let created = match existing(&path)? {
        Existing::None => {
            println!(
                "no ctxguard extension at {} (nothing to remove)",
                path.display()
            );
            return Ok(());
        }
        Existing::Theirs(what) => {
            println!(
                "{} is {what}: left untouched (ctxguard removes only the file its install wrote)",
                path.display()
            );
            return Ok(());
        }
        Existing::Ours(_, created) => created,
    };
    let verb = if dry_run { "would remove" } else { "removed" };
    if !dry_run {
        fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
    }
    println!("{verb} {}", path.display());
    // Innermost first, each only when nothing else is in it (pi's sessions, the user's files).
    let mut gone = vec![path.clone()];
    for dir in created.iter().rev() {
        let others = fs::read_dir(dir).map_or(1, |entries| {
            entries
                .flatten()
                .filter(|e| !gone.contains(&e.path()))
                .count()
        });
        if others > 0 {
            break;
        }
        gone.push(dir.clone());
        if !dry_run {
            fs::remove_dir(dir).with_context(|| format!("removing {}", dir.display()))?;
        }
        println!(
            "{verb} {}: ctxguard's install created it, and it is empty",
            dir.display()
        );
    }
    if dry_run {
        println!("(dry run: nothing written)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_names_the_binary_and_its_folders_and_is_known_by_its_header() {
        let created = [PathBuf::from("/h/.pi/agent/extensions")];
        let text = render("/opt/my \"bin\"/ctxguard", &created).unwrap();
        assert_eq!(header_of(&text), Some(created.to_vec()));
        assert_eq!(
            binary_in(&text).as_deref(),
            Some("/opt/my \"bin\"/ctxguard")
        );
        assert!(!text.contains(PLACEHOLDER));
        // The rest is the extension, unchanged but for the path.
        assert_eq!(text.lines().count(), EXTENSION.lines().count() + 2);
        // The shipped one names no binary, and is no copy of install's.
        assert_eq!(binary_in(EXTENSION), None);
        assert_eq!(header_of(EXTENSION), None);
        assert_eq!(header_of(&format!("// mine\n{text}")), None);
    }

    #[test]
    fn the_folders_to_create_are_the_missing_ones_outermost_first() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b/c");
        assert_eq!(
            missing_dirs(&deep),
            vec![dir.path().join("a"), dir.path().join("a/b"), deep.clone()]
        );
        fs::create_dir_all(&deep).unwrap();
        assert!(missing_dirs(&deep).is_empty());
    }

    #[test]
    fn what_is_there_is_ours_only_with_the_header_and_never_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        assert_eq!(existing(&path).unwrap(), Existing::None);
        fs::write(&path, "export default function () {}\n").unwrap();
        assert_eq!(
            existing(&path).unwrap(),
            Existing::Theirs("a file ctxguard did not write")
        );
        let ours = render("/bin/ctxguard", &[]).unwrap();
        fs::write(&path, &ours).unwrap();
        assert_eq!(existing(&path).unwrap(), Existing::Ours(ours, Vec::new()));
        #[cfg(unix)]
        {
            let link = dir.path().join("link.ts");
            std::os::unix::fs::symlink(&path, &link).unwrap();
            assert_eq!(
                existing(&link).unwrap(),
                Existing::Theirs("a symbolic link")
            );
        }
    }
}
