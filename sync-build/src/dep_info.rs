//! Rerun lines from the nested build's dep-info: the kernel crate's sources and those
//! of its path dependencies (sync-device, say), not the toolchain's.

use std::fs;
use std::path::{Path, PathBuf};

/// Prints `cargo:rerun-if-changed` for every source file that cargo's dep-info of the
/// kernel crate (`<stem>.d` in the nested build's `release` directory) lists: the
/// crate's sources and those of its path dependencies. Files in the toolchain's
/// sysroot (which change only with the toolchain) and the nested build's own outputs
/// are left out.
pub(crate) fn rerun_on_sources(release: &Path, stem: &str, sysroot: &Path, target_dir: &Path) {
    let dep_info = release.join(format!("{stem}.d"));
    let Ok(text) = fs::read_to_string(&dep_info) else {
        return;
    };
    for source in sources(&text) {
        if !source.starts_with(sysroot) && !source.starts_with(target_dir) {
            println!("cargo:rerun-if-changed={}", source.display());
        }
    }
}

/// Prints `cargo:rerun-if-changed` for every prerequisite of the Makefile-style
/// dependency file nvcc wrote (`-MD -MF`): the `.cu` file and every header it
/// included, the user's own and the toolkit's, so that a header edit or another CCCL
/// rebuilds the kernels.
pub(crate) fn rerun_on_prerequisites(dependencies: &Path) {
    let Ok(text) = fs::read_to_string(dependencies) else {
        return;
    };
    for source in sources(&text) {
        println!("cargo:rerun-if-changed={}", source.display());
    }
}

/// The prerequisites of a Makefile-style dep-info file (`target: a b\ c`, rules
/// continued over lines ending in `\`), unescaped.
fn sources(text: &str) -> Vec<PathBuf> {
    let text = text.replace("\\\r\n", " ").replace("\\\n", " ");
    let mut sources = Vec::new();
    for line in text.lines() {
        // Lines of the form `path:` with nothing after are phony targets.
        let Some((_, prerequisites)) = split_rule(line) else {
            continue;
        };
        let mut current = String::new();
        let mut chars = prerequisites.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&' ') => {
                    current.push(' ');
                    chars.next();
                }
                ' ' => {
                    if !current.is_empty() {
                        sources.push(PathBuf::from(std::mem::take(&mut current)));
                    }
                }
                _ => current.push(c),
            }
        }
        if !current.is_empty() {
            sources.push(PathBuf::from(current));
        }
    }
    sources.sort();
    sources.dedup();
    sources
}

/// `target: prerequisites`, split at the first unescaped `": "`.
fn split_rule(line: &str) -> Option<(&str, &str)> {
    let at = line.find(": ")?;
    let prerequisites = line[at + 2..].trim();
    (!prerequisites.is_empty()).then(|| (&line[..at], prerequisites))
}

/// The most recently modified file in `dir` with `extension`.
pub(crate) fn newest_with_extension(dir: &Path, extension: &str) -> Option<PathBuf> {
    let suffix = format!(".{extension}");
    newest(dir, |name| name.ends_with(&suffix))
}

/// The most recently modified file in `dir` whose name `matches`.
fn newest(dir: &Path, matches: impl Fn(&str) -> bool) -> Option<PathBuf> {
    fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|entry| matches(&entry.file_name().to_string_lossy()))
        .filter_map(|entry| Some((entry.metadata().ok()?.modified().ok()?, entry.path())))
        .max_by_key(|(modified, _)| *modified)
        .map(|(_, path)| path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvcc_dependencies_continued_over_lines() {
        let text = "/o/0-k.o : k.cu \\\n    /usr/include/stdc-predef.h \\\n    include/scoped\\ sync.cuh \\\n    my.cuh\n";
        assert_eq!(
            sources(text),
            [
                PathBuf::from("/usr/include/stdc-predef.h"),
                PathBuf::from("include/scoped sync.cuh"),
                PathBuf::from("k.cu"),
                PathBuf::from("my.cuh"),
            ]
        );
    }

    #[test]
    fn dep_info_prerequisites_with_escaped_spaces() {
        let text = "/t/deps/k.s: /src/lib.rs /dev/sync\\ device/src/grid.rs\n\n/src/lib.rs:\n/dev/sync\\ device/src/grid.rs:\n";
        assert_eq!(
            sources(text),
            [
                PathBuf::from("/dev/sync device/src/grid.rs"),
                PathBuf::from("/src/lib.rs")
            ]
        );
    }
}
