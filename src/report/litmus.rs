//! `scoped-sync --litmus`: the GPU litmus suite (`sync_host::cuda::litmus`), a table
//! row per case: instances, how often the weak outcome showed, what the PTX memory
//! model says of it there, and every outcome seen.

use std::io::{self, Write};

use scoped_sync::cuda::litmus::{self, Outcomes, CASES};
use scoped_sync::cuda::Runtime;

/// Runs every case at least `instances` times and prints the table; `Ok(false)` if a
/// forbidden outcome showed.
pub fn run(runtime: &Runtime, instances: u64, out: &mut impl Write) -> io::Result<bool> {
    writeln!(
        out,
        "{:<5}{:<38}{:<15}{:>12}{:>12}  {:<10}seen (outcome: count)",
        "test", "variant", "placement", "instances", "weak", "model"
    )?;
    let mut holds = true;
    for (index, case) in CASES.iter().enumerate() {
        let outcomes = litmus::run(runtime, case, instances, 0x11f0 ^ index as u32)
            .map_err(|error| io::Error::other(error.to_string()))?;
        holds &= !outcomes.violates_the_model();
        write_row(out, &outcomes)?;
        out.flush()?;
    }
    Ok(holds)
}

fn write_row(out: &mut impl Write, outcomes: &Outcomes) -> io::Result<()> {
    let case = &outcomes.case;
    let model = match (case.weak_allowed, outcomes.violates_the_model()) {
        (true, _) => "allowed",
        (false, false) => "forbidden",
        (false, true) => "VIOLATED",
    };
    let seen: Vec<String> = outcomes
        .seen()
        .into_iter()
        .map(|(outcome, count)| format!("{outcome}: {count}"))
        .collect();
    writeln!(
        out,
        "{:<5}{:<38}{:<15}{:>12}{:>12}  {:<10}{}",
        case.shape,
        format!("{} {}", case.variant, case.what),
        case.placement.name(),
        outcomes.instances,
        outcomes.weak(),
        model,
        seen.join(", ")
    )
}
