//! The bus promise, checked in the PTX: no GPU-side operation of a bus object
//! read-modify-writes memory that a kernel parameter points at. A bus object may lie in
//! pinned host memory, where a GPU read-modify-write crosses PCIe and is not atomic for
//! the host (`hostNativeAtomicSupported = 0`); the GPU's side words are reached only
//! through addresses the kernel loads (the words the runtime attached:
//! `sync_shared::bus::SideLine`).
//!
//! The check follows every register derived from a parameter (`ld.param`, then moves,
//! conversions and arithmetic) through the probe kernel and the functions it calls
//! (their parameters count as derived), and fails on an `atom` or `red` whose address
//! is such a register. A loaded value is not derived: that is how the attached words
//! are reached. The probes are `kernels/src/bus_probes.rs`; one breaks the promise on
//! purpose, and the check must catch it.

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

/// The read-modify-writes of `body` whose address derives from a parameter.
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
                .any(|register| derived.contains(register))
                .then(|| format!("{opcode} {}", operands.join(", ")))
        })
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
