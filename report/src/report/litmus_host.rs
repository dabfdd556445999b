//! The host↔GPU litmus suite (`harness::litmus_host`): a table row per case:
//! instances, how often the weak outcome showed, what the memory models say of it, and
//! every outcome seen (`r0=1 r1=0`: `r0` read the batch's new value, `r1` the previous
//! one; `?`: neither, which no case allows).

use std::io::{self, Write};

use harness::litmus_host::{self, HostOutcomes, CASES};
use harness::Gpu;

/// Runs every case at least `instances` times and prints the table; `Ok(false)` if a
/// forbidden or impossible outcome showed.
pub fn run(runtime: &Gpu, instances: u64, out: &mut impl Write) -> io::Result<bool> {
    writeln!(
        out,
        "{:<5}{:<34}{:<10}{:>12}{:>12}  {:<19}seen (outcome: count)",
        "test", "variant (GPU / host)", "direction", "instances", "weak", "model"
    )?;
    let mut holds = true;
    for (index, case) in CASES.iter().enumerate() {
        let outcomes = litmus_host::run(runtime, case, instances, 0x4057 ^ index as u32)
            .map_err(|error| io::Error::other(format!("{}: {error}", case.label())))?;
        holds &= !outcomes.violates_the_model() && outcomes.impossible() == 0;
        write_row(out, &outcomes)?;
        out.flush()?;
    }
    Ok(holds)
}

fn write_row(out: &mut impl Write, outcomes: &HostOutcomes) -> io::Result<()> {
    let case = &outcomes.case;
    let model = if outcomes.impossible() > 0 {
        "IMPOSSIBLE OUTCOME"
    } else if outcomes.violates_the_model() {
        "VIOLATED"
    } else if !case.weak_allowed {
        "forbidden"
    } else if outcomes.weak() > 0 {
        "allowed, seen"
    } else {
        "allowed, not seen"
    };
    let seen: Vec<String> = outcomes
        .seen()
        .into_iter()
        .map(|(outcome, count)| format!("{outcome}: {count}"))
        .collect();
    writeln!(
        out,
        "{:<5}{:<34}{:<10}{:>12}{:>12}  {:<19}{}",
        case.shape.test(),
        format!("{} {}", case.variant, case.what),
        case.shape.direction(),
        outcomes.instances,
        outcomes.weak(),
        model,
        seen.join(", ")
    )
}
