//! Reading the project's PTX module in tests: kernel bodies, function bodies,
//! instructions. Included by the PTX tests with `#[path]` (the other tests need none of
//! it).
#![allow(dead_code)]

use std::collections::BTreeMap;

/// Kernel name → body.
pub fn entries(ptx: &str) -> BTreeMap<&str, &str> {
    let mut entries = BTreeMap::new();
    for (start, _) in ptx.match_indices(".entry ") {
        let rest = &ptx[start + ".entry ".len()..];
        let name = &rest[..rest.find('(').expect("entry name")];
        let body_start = rest.find('{').expect("entry body");
        entries.insert(name, balanced_body(&rest[body_start..]));
    }
    entries
}

/// The text from the opening brace `text` starts with to its balancing brace:
/// inline assembly opens scopes of its own (`{ }` blocks, vector operands), some
/// closing at the start of a line.
fn balanced_body(text: &str) -> &str {
    let mut depth = 0_usize;
    let end = text
        .char_indices()
        .find_map(|(at, c)| {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => return None,
            }
            (depth == 0).then_some(at)
        })
        .expect("end of body");
    &text[..end]
}

/// The body of the function whose mangled name ends in `name` (its length, then the
/// name: `..7give_up`), the definition, not the forward declaration.
pub fn defined_function<'a>(ptx: &'a str, name: &str) -> &'a str {
    let suffix = format!("{}{name}", name.len());
    ptx.split("\n.func ")
        .find(|function| {
            let head = function.lines().next().unwrap_or_default();
            let symbol = head.split(['(', ' ']).rfind(|part| !part.is_empty());
            symbol.is_some_and(|symbol| symbol.ends_with(&suffix))
                && function.lines().any(|line| line.trim() == "{")
        })
        .unwrap_or_else(|| panic!("no function `{name}` defined in the module"))
}

/// Function symbol → body, for every function the module defines.
pub fn functions(ptx: &str) -> BTreeMap<&str, &str> {
    let mut functions = BTreeMap::new();
    for (start, _) in ptx.match_indices("\n.func ") {
        let rest = &ptx[start + "\n.func ".len()..];
        let head_end = rest.find(['{', ';']).expect("function head");
        if rest.as_bytes()[head_end] == b';' {
            continue; // a forward declaration
        }
        let head = &rest[..head_end];
        // `(.param .b64 func_retval0) name(` or `name(`: the symbol stands before the
        // parameter list.
        let before_params = head.rfind('(').map_or(head, |open| &head[..open]);
        let Some(symbol) = before_params
            .split([')', ' ', '\n'])
            .rfind(|part| !part.is_empty())
        else {
            continue;
        };
        functions.insert(symbol.trim(), balanced_body(&rest[head_end..]));
    }
    functions
}

/// A body's instructions, trimmed, without comments, labels, declarations and braces;
/// a guard (`@p`, `@!p`) is kept.
pub fn instructions(body: &str) -> impl Iterator<Item = &str> {
    body.lines()
        .map(|line| line.split("//").next().unwrap_or_default().trim())
        .filter(|line| {
            !line.is_empty()
                && !line.starts_with('.')
                && !line.ends_with(':')
                && *line != "{"
                && *line != "}"
        })
        .map(|line| line.trim_end_matches(';').trim())
}
