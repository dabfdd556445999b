//! The nested build's diagnostics, sorted by whose they are: the kernel crate's own
//! are the user's to see (forwarded as `cargo:warning` on success, shown first on
//! failure); the library's warnings (the device crates, `core`) are not. Read from
//! cargo's `--message-format=json` lines with a small reader of the two fields needed
//! (the build helper has no dependencies).

use std::path::Path;

/// One compiler message of the nested build.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Message {
    /// Whether it comes from the kernel crate itself.
    pub(crate) own: bool,
    /// `"error"`, `"warning"`, ...
    pub(crate) level: String,
    /// The message as rustc renders it for a terminal (without colour).
    pub(crate) rendered: String,
}

impl Message {
    /// Whether the message is about the build helper's own settings, not the user's
    /// code: rustc warns on every crate that `+ptxNN` is an unstable target feature,
    /// and counts the warnings it emitted.
    fn is_ours(&self) -> bool {
        self.rendered
            .starts_with("warning: unstable feature specified for `-Ctarget-feature`")
            || (self.rendered.starts_with("warning: ")
                && self.rendered.trim_end().ends_with(" emitted")
                && !self.rendered.contains("-->"))
    }
}

/// The compiler messages in cargo's JSON output `stdout`; `manifest` is the kernel
/// crate's `Cargo.toml`.
pub(crate) fn messages(stdout: &str, manifest: &Path) -> Vec<Message> {
    let manifest = manifest.to_string_lossy();
    stdout
        .lines()
        .filter(|line| line.contains(r#""reason":"compiler-message""#))
        .filter_map(|line| {
            let rendered = string_field(line, "rendered")?;
            let level = string_field(line, "level").unwrap_or_default();
            let own = string_field(line, "manifest_path").is_some_and(|path| path == manifest);
            Some(Message {
                own,
                level,
                rendered,
            })
        })
        .collect()
}

/// The text to show for a failed build: every error, and the kernel crate's own
/// warnings; the library's warnings are left out.
pub(crate) fn failure_text(messages: &[Message], stderr: &str) -> String {
    let mut text = String::new();
    for message in messages {
        if message.level.starts_with("error") || (message.own && !message.is_ours()) {
            text.push_str(message.rendered.trim_end());
            text.push_str("\n\n");
        }
    }
    // Cargo's own closing lines ("error: could not compile ..."), and anything it
    // said that was no compiler message (a manifest error, say).
    for line in stderr.lines() {
        let line = line.trim_start();
        if line.starts_with("error") || line.starts_with("Caused by") || line.starts_with("--> ") {
            text.push_str(line);
            text.push('\n');
        }
    }
    if text.trim().is_empty() {
        stderr.to_owned()
    } else {
        text
    }
}

/// Prints the kernel crate's own warnings as `cargo:warning` lines (one per line of
/// each rendered message: cargo shows them under the host package's name).
pub(crate) fn forward_own_warnings(messages: &[Message]) {
    for message in messages
        .iter()
        .filter(|message| message.own && !message.is_ours())
    {
        for line in message.rendered.trim_end().lines() {
            println!("cargo:warning={line}");
        }
    }
}

/// The value of the first string field `"name":"..."` of a JSON line, unescaped (a
/// field of that name nested deeper counts too: the callers ask for names that occur
/// once in a compiler message, or first where they mean it).
fn string_field(line: &str, name: &str) -> Option<String> {
    let key = format!("\"{name}\":\"");
    let start = line.find(&key)? + key.len();
    let mut value = String::new();
    let mut chars = line[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(value),
            '\\' => match chars.next()? {
                'n' => value.push('\n'),
                't' => value.push('\t'),
                'r' => value.push('\r'),
                'b' => value.push('\u{8}'),
                'f' => value.push('\u{c}'),
                'u' => {
                    let code: String = chars.by_ref().take(4).collect();
                    let code = u32::from_str_radix(&code, 16).ok()?;
                    value.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                }
                other => value.push(other),
            },
            other => value.push(other),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWN: &str = r#"{"reason":"compiler-message","package_id":"path+file:///k#0.1.0","manifest_path":"/k/Cargo.toml","target":{"name":"k"},"message":{"rendered":"warning: unused variable: `x`\n --> src/lib.rs:3:9\n  |\n3 |     let x = \"a\\b\";\n","$message_type":"diagnostic","level":"warning","message":"unused"}}"#;
    const LIBRARY: &str = r#"{"reason":"compiler-message","package_id":"path+file:///lib#0.1.0","manifest_path":"/lib/Cargo.toml","target":{"name":"lib"},"message":{"rendered":"warning: dead code\n","level":"warning"}}"#;
    const LIBRARY_ERROR: &str = r#"{"reason":"compiler-message","manifest_path":"/lib/Cargo.toml","message":{"rendered":"error[E0308]: mismatched types\n","level":"error"}}"#;

    #[test]
    fn messages_are_sorted_by_crate_and_unescaped() {
        let stdout = [OWN, LIBRARY, r#"{"reason":"compiler-artifact"}"#].join("\n");
        let found = messages(&stdout, Path::new("/k/Cargo.toml"));
        assert_eq!(found.len(), 2);
        assert!(found[0].own && !found[1].own);
        assert_eq!(found[0].level, "warning");
        assert_eq!(
            found[0].rendered,
            "warning: unused variable: `x`\n --> src/lib.rs:3:9\n  |\n3 |     let x = \"a\\b\";\n"
        );
    }

    #[test]
    fn a_failure_shows_errors_and_own_warnings_but_not_the_librarys() {
        let stdout = [LIBRARY, OWN, LIBRARY_ERROR].join("\n");
        let found = messages(&stdout, Path::new("/k/Cargo.toml"));
        let text = failure_text(&found, "   Compiling k\nerror: could not compile `k`\n");
        assert!(text.contains("unused variable"), "{text}");
        assert!(text.contains("error[E0308]"), "{text}");
        assert!(text.contains("error: could not compile `k`"), "{text}");
        assert!(!text.contains("dead code"), "{text}");
    }

    #[test]
    fn the_helpers_own_flag_warning_and_the_counts_are_not_the_users() {
        let flag = Message {
            own: true,
            level: "warning".into(),
            rendered: "warning: unstable feature specified for `-Ctarget-feature`: `ptx86`\n"
                .into(),
        };
        let count = Message {
            own: true,
            level: "warning".into(),
            rendered: "warning: 2 warnings emitted\n\n".into(),
        };
        assert!(flag.is_ours() && count.is_ours());
        let found = messages(OWN, Path::new("/k/Cargo.toml"));
        assert!(!found[0].is_ours());
    }

    #[test]
    fn a_failure_without_compiler_messages_shows_cargos_words() {
        let text = failure_text(&[], "manifest broken\n");
        assert_eq!(text, "manifest broken\n");
    }
}
