//! Where the program a command names is, as `sh` finds it (and, for the exec form, the client):
//! `~/`, `$HOME/` and `${HOME}/` under the home directory, a name with a directory in it as
//! written, a bare name on `PATH`; on Windows with the extension it would be run with. `install`
//! asks it whether a registered program is ctxguard, `doctor` whether it can run.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::files;

/// What can be told about the program a command runs.
#[derive(Debug, PartialEq, Eq)]
pub enum Program {
    Executable(PathBuf),
    /// There, but not a file this platform runs (a directory, no execute bit).
    NotExecutable(PathBuf),
    Missing,
    /// It depends on the shell (a variable, or `~` without a known home).
    Unknown,
}

impl Program {
    /// The file the command names, when there is one (runnable or not).
    pub fn file(&self) -> Option<&Path> {
        match self {
            Program::Executable(p) | Program::NotExecutable(p) => Some(p),
            Program::Missing | Program::Unknown => None,
        }
    }
}

/// Finds `program` with the home directory `home` and the `PATH` `search_path`. A relative
/// directory on `PATH` is skipped: what it finds depends on the directory a hook runs in.
pub fn locate(program: &str, home: Option<&Path>, search_path: Option<&OsStr>) -> Program {
    let home_relative = ["~/", "$HOME/", "${HOME}/"]
        .iter()
        .find_map(|prefix| program.strip_prefix(prefix));
    let written = Path::new(program);
    let candidates: Vec<PathBuf> = match (home_relative, home) {
        (Some(rest), Some(home)) => files::program_candidates(home.join(rest)),
        (Some(_), None) => return Program::Unknown,
        (None, _) if program.contains(['$', '`']) => return Program::Unknown,
        (None, _) if program.is_empty() => return Program::Missing,
        (None, _) if written.is_absolute() || written.components().count() > 1 => {
            files::program_candidates(written.to_path_buf())
        }
        (None, _) => search_path
            .into_iter()
            .flat_map(std::env::split_paths)
            .filter(|dir| dir.is_absolute())
            .flat_map(|dir| files::program_candidates(dir.join(program)))
            .collect(),
    };
    if let Some(p) = candidates.iter().find(|p| files::is_executable(p)) {
        return Program::Executable(p.clone());
    }
    match candidates.into_iter().find(|p| p.exists()) {
        Some(p) => Program::NotExecutable(p),
        None => Program::Missing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// A runnable file `name` in `dir`.
    fn program(dir: &Path, name: &str) -> PathBuf {
        let path = dir
            .join(name)
            .with_extension(std::env::consts::EXE_EXTENSION);
        fs::write(&path, "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        }
        path
    }

    #[test]
    fn found_as_sh_would() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let bin = home.join("bin");
        fs::create_dir_all(&bin).unwrap();
        let exe = program(&bin, "cg");
        let path = std::env::join_paths([dir.path(), &bin]).unwrap();
        let locate = |p: &str| locate(p, Some(&home), Some(&path));
        for written in ["~/bin/cg", "$HOME/bin/cg", "${HOME}/bin/cg", "cg"] {
            assert_eq!(
                locate(written),
                Program::Executable(exe.clone()),
                "{written}"
            );
        }
        assert_eq!(
            locate(exe.to_str().unwrap()),
            Program::Executable(exe.clone())
        );
        assert_eq!(locate("~/bin/other"), Program::Missing);
        assert_eq!(locate("other"), Program::Missing);
        assert_eq!(locate(""), Program::Missing);
        assert_eq!(locate("`which cg`"), Program::Unknown);
        assert_eq!(locate("$SUB/cg"), Program::Unknown);
        assert_eq!(
            locate(bin.to_str().unwrap()),
            Program::NotExecutable(bin.clone())
        );
        assert_eq!(locate(bin.to_str().unwrap()).file(), Some(bin.as_path()));
        // No home: `~` is the shell's to expand.
        assert_eq!(
            super::locate("~/bin/cg", None, Some(&path)),
            Program::Unknown
        );
        // No PATH: a bare name is nowhere.
        assert_eq!(super::locate("cg", Some(&home), None), Program::Missing);
    }

    /// A relative directory on `PATH` finds a program only from some directories: neither
    /// `install` (is it ctxguard?) nor `doctor` (can it run?) counts on it.
    #[test]
    fn a_relative_path_entry_is_skipped() {
        // Under the working directory, so a relative path reaches it on every platform (on
        // Windows the temp folder may be on another drive, which no relative path reaches).
        let cwd = std::env::current_dir().unwrap();
        let dir = tempfile::tempdir_in(&cwd).unwrap();
        let bin = dir.path().join("bin");
        fs::create_dir_all(&bin).unwrap();
        program(&bin, "cg");
        let relative = pathdiff(&bin, &cwd);
        let path = std::env::join_paths([relative]).unwrap();
        assert_eq!(locate("cg", None, Some(&path)), Program::Missing);
    }

    /// `to` written relative to `from` (`../..` up to their common part, then down).
    fn pathdiff(to: &Path, from: &Path) -> PathBuf {
        let common = to
            .components()
            .zip(from.components())
            .take_while(|(a, b)| a == b)
            .count();
        let mut out = PathBuf::new();
        for _ in from.components().skip(common) {
            out.push("..");
        }
        for c in to.components().skip(common) {
            out.push(c);
        }
        out
    }
}
