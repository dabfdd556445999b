//! The bus promise, checked in the PTX: no GPU-side operation of a bus object
//! read-modify-writes memory that a kernel parameter points at, except a side line's
//! own word chosen by the line's mark. A bus object may lie in pinned host memory,
//! where a GPU read-modify-write crosses PCIe and is not atomic for the host
//! (`hostNativeAtomicSupported = 0`); the GPU's side words are reached through the
//! address the runtime attached to each side line, loaded by the kernel, or, where the
//! line holds `ITS_OWN_WORD` (which the runtime writes only for an object in GPU
//! memory), the line's own word (`sync_shared::bus::SideLine::attached_gpu_word`).
//!
//! The check follows every register derived from a parameter (`ld.param`, then moves,
//! conversions and arithmetic) through the probe kernel and the functions it calls
//! (their parameters count as derived), and fails on an `atom` or `red` whose address
//! is such a register, unless that register is a selection between the two: every one
//! of its definitions a move, of a value loaded from the object (the attached address)
//! or of the address of the word 8 bytes before a word so loaded (the line's own word,
//! beside the mark). A loaded value is not derived. The probes are
//! `kernels/src/bus_probes.rs`; one breaks the promise on purpose, and the check must
//! catch it.

#[path = "common/ptx.rs"]
mod ptx;

use std::collections::{BTreeMap, BTreeSet};

use harness::KERNELS;
use scoped_sync::cuda::KernelBuild;

/// The registers an operand names (`%rd4`, `[%rd4+8]`, `{%r1, %r2}`).
fn registers(operand: &str) -> Vec<&str> {
    operand
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '%' || c == '_' || c == '$'))
        .filter(|part| part.starts_with('%'))
        .collect()
}

/// Splits an instruction into its opcode (without a guard) and operands.
fn parse(instruction: &str) -> (&str, Vec<&str>) {
    let instruction = match instruction.strip_prefix('@') {
        Some(guarded) => guarded
            .split_once(char::is_whitespace)
            .map_or("", |(_, rest)| rest.trim_start()),
        None => instruction,
    };
    let (opcode, operands) = instruction
        .split_once(char::is_whitespace)
        .unwrap_or((instruction, ""));
    // Commas inside braces and brackets do not separate operands.
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0_i32, 0);
    for (at, c) in operands.char_indices() {
        match c {
            '{' | '[' | '(' => depth += 1,
            '}' | ']' | ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(operands[start..at].trim());
                start = at + 1;
            }
            _ => {}
        }
    }
    if !operands[start..].trim().is_empty() {
        parts.push(operands[start..].trim());
    }
    (opcode, parts)
}

/// Whether the opcode reads and writes memory in one instruction.
fn is_read_modify_write(opcode: &str) -> bool {
    opcode.starts_with("atom.") || opcode.starts_with("red.")
}

/// Opcodes whose first operand is no register they define.
fn defines_nothing(opcode: &str) -> bool {
    [
        "st.", "red.", "bar", "barrier", "membar", "fence", "bra", "call", "ret", "exit", "trap",
    ]
    .iter()
    .any(|prefix| opcode.starts_with(prefix))
}

/// The read-modify-writes of `body` whose address derives from a parameter, but for
/// the selections of a side line's own word (see the module's note).
fn rmw_on_parameter_memory(body: &str) -> Vec<String> {
    let instructions: Vec<(&str, Vec<&str>)> = ptx::instructions(body).map(parse).collect();
    let mut derived: BTreeSet<&str> = BTreeSet::new();
    // To a fixed point: a loop's back edge carries registers defined further down.
    loop {
        let before = derived.len();
        for (opcode, operands) in &instructions {
            let Some((destination, sources)) = operands.split_first() else {
                continue;
            };
            if defines_nothing(opcode) {
                continue;
            }
            let from_parameter = if opcode.starts_with("ld.param") {
                true
            } else if opcode.starts_with("ld.") || is_read_modify_write(opcode) {
                false // a loaded value: not the parameter's address
            } else {
                sources
                    .iter()
                    .flat_map(|source| registers(source))
                    .any(|register| derived.contains(register))
            };
            if from_parameter {
                derived.extend(registers(destination));
            }
        }
        if derived.len() == before {
            break;
        }
    }
    instructions
        .iter()
        .filter(|(opcode, _)| is_read_modify_write(opcode))
        .filter_map(|(opcode, operands)| {
            let address = operands.iter().find(|operand| operand.starts_with('['))?;
            registers(address)
                .iter()
                .any(|register| {
                    derived.contains(register) && !selects_own_word(&instructions, register)
                })
                .then(|| format!("{opcode} {}", operands.join(", ")))
        })
        .collect()
}

/// Whether `register` only ever holds a value loaded from the object (an attached
/// address) or the address of the word 8 bytes before such a loaded word (the line's
/// own word, beside its mark), through moves: what `SideLine::attached_gpu_word`
/// compiles to, with its registers reused across the branches.
fn selects_own_word<'a>(instructions: &[(&str, Vec<&'a str>)], register: &'a str) -> bool {
    let (mut marks, mut own_words) = (Vec::new(), Vec::new());
    trace_selection(instructions, register, 0, &mut marks, &mut own_words)
        && !marks.is_empty()
        && own_words
            .iter()
            .all(|(base, offset)| marks.contains(&(*base, offset + 8)))
}

/// Follows every definition of `register` back through moves, collecting the object
/// words loaded (`marks`) and the object addresses taken (`own_words`), as (base
/// register, offset); false on any other definition.
fn trace_selection<'a>(
    instructions: &[(&str, Vec<&'a str>)],
    register: &'a str,
    depth: usize,
    marks: &mut Vec<(&'a str, i64)>,
    own_words: &mut Vec<(&'a str, i64)>,
) -> bool {
    let definitions = definitions(instructions, register);
    if depth > 16 || definitions.is_empty() {
        return false;
    }
    for (opcode, operands) in definitions {
        let traced = match (opcode, operands) {
            (op, [_, address]) if op.starts_with("ld.") && !op.starts_with("ld.param") => {
                object_word(instructions, address).map(|word| marks.push(word))
            }
            (op, [_, source]) if op.starts_with("mov") || op.starts_with("cvta") => {
                trace_selection(instructions, source, depth + 1, marks, own_words).then_some(())
            }
            (op, [_, _, _]) if op.starts_with("add.") => {
                address_of(instructions, register).map(|word| own_words.push(word))
            }
            _ => None,
        };
        if traced.is_none() {
            return false;
        }
    }
    true
}

/// A load's `[base+K]` operand as (the base's root, its offset plus K).
fn object_word<'a>(
    instructions: &[(&str, Vec<&'a str>)],
    address: &'a str,
) -> Option<(&'a str, i64)> {
    let address = address.trim_start_matches('[').trim_end_matches(']');
    let (base, offset) = match address.split_once('+') {
        Some((base, offset)) => (base, offset.parse::<i64>().ok()?),
        None => (address, 0),
    };
    let (root, at) = address_of(instructions, base)?;
    Some((root, at + offset))
}

/// `register` as (root register, offset): through single definitions that are moves,
/// address-space conversions or additions of an immediate, down to a register defined
/// otherwise (a parameter's load).
fn address_of<'a>(
    instructions: &[(&str, Vec<&'a str>)],
    register: &'a str,
) -> Option<(&'a str, i64)> {
    let [(opcode, operands)] = definitions(instructions, register)[..] else {
        return None;
    };
    match (opcode, operands) {
        (op, [_, source]) if op.starts_with("mov") || op.starts_with("cvta") => {
            address_of(instructions, source)
        }
        (op, [_, source, offset]) if op.starts_with("add.") => {
            let (root, at) = address_of(instructions, source)?;
            Some((root, at + offset.parse::<i64>().ok()?))
        }
        _ => Some((register, 0)),
    }
}

/// Every instruction that defines `register`.
fn definitions<'a, 'b>(
    instructions: &'b [(&'b str, Vec<&'a str>)],
    register: &str,
) -> Vec<(&'b str, &'b [&'a str])> {
    instructions
        .iter()
        .filter(|(opcode, operands)| {
            !defines_nothing(opcode) && operands.first() == Some(&register)
        })
        .map(|(opcode, operands)| (*opcode, operands.as_slice()))
        .collect()
}

/// The body of `kernel` and of every function it calls, directly or not.
fn bodies_reached<'a>(ptx: &'a str, kernel: &str) -> Vec<(String, &'a str)> {
    let entries = ptx::entries(ptx);
    let functions: BTreeMap<&str, &str> = ptx::functions(ptx);
    let mut reached = vec![(
        kernel.to_owned(),
        *entries.get(kernel).expect("the probe kernel"),
    )];
    let mut seen = BTreeSet::new();
    let mut next = 0;
    while next < reached.len() {
        let body = reached[next].1;
        next += 1;
        for (opcode, operands) in ptx::instructions(body).map(parse) {
            if !opcode.starts_with("call") {
                continue;
            }
            for operand in operands {
                let callee = operand.trim();
                if let Some(&callee_body) = functions.get(callee) {
                    if seen.insert(callee.to_owned()) {
                        reached.push((callee.to_owned(), callee_body));
                    }
                }
            }
        }
    }
    reached
}

/// Violations in `kernel` and what it calls, as `function: instruction`.
fn violations(ptx: &str, kernel: &str) -> Vec<String> {
    bodies_reached(ptx, kernel)
        .into_iter()
        .flat_map(|(name, body)| {
            rmw_on_parameter_memory(body)
                .into_iter()
                .map(move |instruction| format!("{name}: {instruction}"))
        })
        .collect()
}

#[test]
fn no_gpu_side_operation_of_a_bus_object_read_modify_writes_the_object() {
    for build in [KernelBuild::Release, KernelBuild::Checked] {
        let ptx = match KERNELS.ptx(build) {
            Ok(ptx) => ptx,
            Err(missing) => {
                println!("skipped: {missing}");
                return;
            }
        };
        let bodies = bodies_reached(ptx, "bus_side_operations");
        let atomics = bodies
            .iter()
            .flat_map(|(_, body)| ptx::instructions(body))
            .filter(|instruction| instruction.contains("atom."))
            .count();
        assert!(
            atomics >= 5,
            "{build:?}: the probe holds {atomics} atomics: the bus operations were optimized away?"
        );
        let found = violations(ptx, "bus_side_operations");
        assert!(
            found.is_empty(),
            "{build:?}: read-modify-writes on a bus object's own memory:\n{}",
            found.join("\n")
        );
    }
}

#[test]
fn the_check_catches_a_deliberate_rmw_on_a_bus_word() {
    let Ok(ptx) = KERNELS.ptx(KernelBuild::Release) else {
        println!("skipped: no PTX module");
        return;
    };
    let found = violations(ptx, "bus_side_rmw_on_a_bus_word");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("atom.relaxed.gpu.add"), "{found:?}");
}

#[test]
fn the_parser_follows_derived_registers_and_stops_at_loads() {
    let body = "{
	ld.param.u64 	%rd1, [k_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	add.s64 	%rd3, %rd2, 64;
	ld.relaxed.sys.global.u64 	%rd4, [%rd2+8];
	atom.relaxed.gpu.add.u64 	%rd5, [%rd4], 1;
	@%p1 red.relaxed.gpu.global.add.u64 	[%rd3], 1;
	mov.b64 	{%r1, %r2}, %rd3;
	atom.relaxed.sys.cas.b32 	%r3, [%r1], %r4, %r5;
}";
    let found = rmw_on_parameter_memory(body);
    assert_eq!(
        found,
        [
            "red.relaxed.gpu.global.add.u64 [%rd3], 1",
            "atom.relaxed.sys.cas.b32 %r3, [%r1], %r4, %r5"
        ]
    );
}

#[test]
fn the_parser_admits_a_side_lines_own_word_only_beside_its_mark() {
    // `attached_gpu_word`: the mark at +136 chooses the own word at +128 (allowed) or
    // the attached address; a selection whose own word is not beside the mark it
    // loaded (+64, the mark at +136) is a violation, as is the own word used alone.
    let body = "{
	ld.param.u64 	%rd1, [k_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	add.s64 	%rd3, %rd2, 128;
	cvta.global.u64 	%rd4, %rd3;
	ld.relaxed.sys.global.b64 	%rd5, [%rd2+136];
	mov.b64 	%rd6, %rd4;
	mov.b64 	%rd6, %rd5;
	atom.relaxed.gpu.cas.b64 	%rd7, [%rd6], %rd8, %rd9;
	add.s64 	%rd10, %rd2, 64;
	mov.b64 	%rd11, %rd10;
	mov.b64 	%rd11, %rd5;
	atom.relaxed.gpu.add.u64 	%rd12, [%rd11], 1;
	atom.relaxed.gpu.add.u64 	%rd13, [%rd4], 1;
}";
    let found = rmw_on_parameter_memory(body);
    assert_eq!(
        found,
        [
            "atom.relaxed.gpu.add.u64 %rd12, [%rd11], 1",
            "atom.relaxed.gpu.add.u64 %rd13, [%rd4], 1"
        ]
    );
}
