//! `scoped-sync --litmus`: the GPU litmus suite (`harness::litmus`), a table
//! row per case (shape, variant, scope of the operations, placement of the roles):
//! instances, how often the weak outcome showed, what the PTX memory model says of it
//! there (and, where it allows it, whether the hardware showed it), and every outcome
//! seen with its count.

use std::io::{self, Write};

use harness::litmus::{self, Outcomes, CASES};
use harness::Gpu;

/// Runs every case at least `instances` times and prints the table; `Ok(false)` if a
/// forbidden outcome (or one the shape cannot produce) showed, or a case could not run.
pub fn run(runtime: &Gpu, instances: u64, out: &mut impl Write) -> io::Result<bool> {
    writeln!(
        out,
        "{:<7}{:<36}{:<9}{:<23}{:>12}{:>11}  {:<19}seen (outcome: count)",
        "test", "variant", "scope", "placement", "instances", "weak", "model"
    )?;
    let mut totals = Totals::default();
    for (index, case) in CASES.iter().enumerate() {
        match litmus::run(runtime, case, instances, 0x11f0 ^ index as u32) {
            Ok(outcomes) => {
                totals.add(&outcomes);
                write_row(out, &outcomes)?;
            }
            // One case that cannot run (a launch refused, say) does not hide the rest.
            Err(error) => {
                totals.errors += 1;
                writeln!(out, "{}: ERROR: {error}", case.label())?;
            }
        }
        out.flush()?;
    }
    totals.write(out)?;
    Ok(totals.violations == 0 && totals.impossible == 0 && totals.errors == 0)
}

/// The verdict column.
fn model(outcomes: &Outcomes) -> &'static str {
    if outcomes.impossible() > 0 {
        "IMPOSSIBLE OUTCOME"
    } else if outcomes.violates_the_model() {
        "VIOLATED"
    } else if !outcomes.case.weak_allowed {
        "forbidden"
    } else if outcomes.weak() > 0 {
        "allowed, seen"
    } else {
        "allowed, not seen"
    }
}

fn write_row(out: &mut impl Write, outcomes: &Outcomes) -> io::Result<()> {
    let case = &outcomes.case;
    let seen: Vec<String> = outcomes
        .seen()
        .into_iter()
        .map(|(outcome, count)| format!("{outcome}: {count}"))
        .collect();
    let placement = if outcomes.cooperative {
        case.placement.name().to_owned()
    } else {
        format!("{}*", case.placement.name())
    };
    writeln!(
        out,
        "{:<7}{:<36}{:<9}{:<23}{:>12}{:>11}  {:<19}{}",
        case.shape.name,
        format!("{} {}", case.variant, case.what),
        case.scope.name(),
        placement,
        outcomes.instances,
        outcomes.weak(),
        model(outcomes),
        seen.join(", ")
    )
}

/// The summary under the table.
#[derive(Default)]
struct Totals {
    cases: usize,
    instances: u64,
    allowed: usize,
    allowed_seen: usize,
    violations: usize,
    impossible: usize,
    errors: usize,
    not_cooperative: usize,
}

impl Totals {
    fn add(&mut self, outcomes: &Outcomes) {
        self.cases += 1;
        self.instances += outcomes.instances;
        if outcomes.case.weak_allowed {
            self.allowed += 1;
            self.allowed_seen += usize::from(outcomes.weak() > 0);
        }
        self.violations += usize::from(outcomes.violates_the_model());
        self.impossible += usize::from(outcomes.impossible() > 0);
        self.not_cooperative += usize::from(!outcomes.cooperative);
    }

    fn write(&self, out: &mut impl Write) -> io::Result<()> {
        writeln!(
            out,
            "{} cases, {} instances: weak outcome seen in {} of the {} cases where the model allows it; {} cases violated the model, {} showed an impossible outcome, {} could not run",
            self.cases,
            self.instances,
            self.allowed_seen,
            self.allowed,
            self.violations,
            self.impossible,
            self.errors
        )?;
        if self.not_cooperative > 0 {
            writeln!(
                out,
                "* {} cluster cases ran without the cooperative launch attribute (the driver refused it with clusters); the grid was sized so that every cluster fits at once",
                self.not_cooperative
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A made-up result of `case` with these (outcome, count) pairs.
    fn outcomes(case: usize, counts: &[(usize, u64)]) -> Outcomes {
        let mut histogram = vec![0; litmus::OUTCOMES];
        for &(outcome, count) in counts {
            histogram[outcome] = count;
        }
        Outcomes {
            case: CASES[case],
            instances: histogram.iter().sum(),
            histogram,
            cooperative: true,
        }
    }

    fn row(outcomes: &Outcomes) -> String {
        let mut out = Vec::new();
        write_row(&mut out, outcomes).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn rows_say_what_the_model_says_and_what_showed() {
        let index = |allowed: bool| {
            CASES
                .iter()
                .position(|case| case.shape.name == "MP" && case.weak_allowed == allowed)
                .unwrap()
        };
        // MP: outcome 0b01 is r0=1 r1=0, the weak one.
        let seen = row(&outcomes(index(true), &[(0b0101, 90), (0b01, 10)]));
        assert!(seen.contains("allowed, seen"), "{seen}");
        assert!(seen.contains("r0=1 r1=1: 90, r0=1 r1=0: 10"), "{seen}");
        let unseen = row(&outcomes(index(true), &[(0b0101, 100)]));
        assert!(unseen.contains("allowed, not seen"), "{unseen}");
        let held = row(&outcomes(index(false), &[(0, 100)]));
        assert!(held.contains("forbidden"), "{held}");
        let broken = outcomes(index(false), &[(0b01, 1), (0, 99)]);
        assert!(broken.violates_the_model());
        assert!(row(&broken).contains("VIOLATED"));
        let bug = outcomes(index(true), &[(0b11, 1)]);
        assert_eq!(bug.impossible(), 1);
        assert!(row(&bug).contains("IMPOSSIBLE"));
    }
}
