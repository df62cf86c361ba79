//! Which algorithm each collective ran in the traced run, so that the
//! replay expands it with the same one ([`super::expand`]).
//!
//! `fsin qemu --trace-level mpi` pins most of Open MPI 4.1's `coll_tuned`
//! choices (`coll_tuned_use_dynamic_rules=1` and one
//! `coll_tuned_<op>_algorithm` each, [`PINNED`]) and leaves
//! `MPI_Alltoall` and `MPI_Alltoallv` to Open MPI's fixed rules
//! ([`FIXED`]), which the replay computes as Open MPI does
//! ([`alltoall_fixed`], [`alltoallv_fixed`]). Pinning those two cost NPB
//! IS 13% of its guest time at 16 guests (docs/qemu.md): Open MPI's own
//! choice for IS's small Alltoall is the modified Bruck algorithm, and for
//! its Alltoallv at 4 to 63 ranks the basic linear one, where the pin was
//! pairwise for both.
//!
//! The trace's header names the choices (`barrier=3 ... alltoall=fixed`,
//! [`Algorithms::header`]); the reader gives them back
//! ([`Algorithms::parse`]), so that a trace keeps replaying with the
//! algorithms it was taken with, whatever a later fsin-rs pins.

use super::Collective;

/// How one collective's algorithm was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// Pinned to Open MPI 4.1's `coll_tuned` algorithm of that number
    /// (`ompi_info --param coll tuned --level 9`).
    Pinned(u32),
    /// Open MPI 4.1's fixed decision rules
    /// (`coll_tuned_decision_fixed.c`), from the communicator's size and
    /// the message's bytes.
    Fixed,
}

/// The collectives `fsin qemu --trace-level mpi` pins: (operation, MCA
/// name, algorithm number, what it is). `MPI_Gatherv` and `MPI_Scatterv`
/// are not tuned's: coll/basic's linear ones run.
pub const PINNED: [(Collective, &str, u32, &str); 8] = [
    (Collective::Barrier, "barrier", 3, "recursive doubling"),
    (Collective::Bcast, "bcast", 6, "binomial tree"),
    (Collective::Reduce, "reduce", 5, "binomial tree"),
    (Collective::Allreduce, "allreduce", 3, "recursive doubling"),
    (Collective::Allgather, "allgather", 4, "ring"),
    (Collective::Allgatherv, "allgatherv", 3, "ring"),
    (Collective::Gather, "gather", 1, "linear"),
    (Collective::Scatter, "scatter", 1, "linear"),
];

/// The collectives left to Open MPI's fixed rules: (operation, MCA name).
pub const FIXED: [(Collective, &str); 2] = [
    (Collective::Alltoall, "alltoall"),
    (Collective::Alltoallv, "alltoallv"),
];

/// The algorithm numbers the replay can expand, per operation (Open MPI
/// 4.1's numbering): alltoall 1 linear, 2 pairwise, 3 modified Bruck, 4
/// linear_sync (the same messages as linear without a request limit), 5
/// two_proc (pairwise, which it is on the 2 ranks it is for); alltoallv 1
/// basic linear, 2 pairwise; the others the one [`PINNED`] gives.
fn expandable(op: Collective, n: u32) -> bool {
    match op {
        Collective::Alltoall => (1..=5).contains(&n),
        Collective::Alltoallv => (1..=2).contains(&n),
        _ => PINNED.iter().any(|&(o, _, k, _)| o == op && k == n),
    }
}

/// Each collective's [`Choice`] in one traced run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Algorithms {
    /// Per operation, in [`Collective::ALL`]'s order.
    choices: [Choice; 12],
}

impl Default for Algorithms {
    /// What `fsin qemu --trace-level mpi` sets: [`PINNED`] and [`FIXED`].
    fn default() -> Algorithms {
        let mut choices = [Choice::Fixed; 12];
        for (op, _, n, _) in PINNED {
            choices[index(op)] = Choice::Pinned(n);
        }
        Algorithms { choices }
    }
}

/// `op`'s position in [`Collective::ALL`].
fn index(op: Collective) -> usize {
    Collective::ALL
        .iter()
        .position(|&o| o == op)
        .unwrap_or_default()
}

/// The MCA name of a tuned collective (`alltoall`), or `None` for the
/// ones coll/basic runs.
fn mca_name(op: Collective) -> Option<&'static str> {
    PINNED
        .iter()
        .map(|&(o, name, _, _)| (o, name))
        .chain(FIXED)
        .find(|&(o, _)| o == op)
        .map(|(_, name)| name)
}

impl Algorithms {
    /// How `op` was chosen. `MPI_Gatherv` and `MPI_Scatterv` have no
    /// choice (coll/basic); they give [`Choice::Fixed`].
    pub fn choice(&self, op: Collective) -> Choice {
        self.choices[index(op)]
    }

    /// The choices as the trace's header writes them after `coll_tuned`:
    /// `barrier=3 bcast=6 ... alltoall=fixed alltoallv=fixed`.
    pub fn header(&self) -> String {
        let mut out = Vec::new();
        for op in Collective::ALL {
            if let Some(name) = mca_name(op) {
                match self.choice(op) {
                    Choice::Pinned(n) => out.push(format!("{name}={n}")),
                    Choice::Fixed => out.push(format!("{name}=fixed")),
                }
            }
        }
        out.join(" ")
    }

    /// Reads the choices from a trace header's name (the text between the
    /// quotes of `#DIMEMAS:"..."`): the `name=N` and `name=fixed` words
    /// that follow the word `coll_tuned`, up to the first word without
    /// `=`. A collective the name does not mention keeps
    /// [`Algorithms::default`]'s choice; a name without the word
    /// `coll_tuned` (another tool's trace) gives the default.
    ///
    /// # Errors
    /// [`AlgorithmsError`], naming the word: an unknown collective, one
    /// named twice, a value that is neither digits nor `fixed`, a number
    /// that is not one the replay expands, or `fixed` for a collective
    /// whose fixed rules the replay does not model (only Alltoall and
    /// Alltoallv).
    pub fn parse(name: &str) -> Result<Algorithms, AlgorithmsError> {
        let mut a = Algorithms::default();
        let mut words = name.split_whitespace();
        if !words.any(|w| w == "coll_tuned") {
            return Ok(a);
        }
        let mut seen = [false; 12];
        for word in words {
            let Some((key, value)) = word.split_once('=') else {
                break;
            };
            let op = Collective::ALL
                .into_iter()
                .find(|&op| mca_name(op) == Some(key))
                .ok_or_else(|| AlgorithmsError::Unknown {
                    word: word.to_string(),
                    key: key.to_string(),
                })?;
            if std::mem::replace(&mut seen[index(op)], true) {
                return Err(AlgorithmsError::Twice {
                    word: word.to_string(),
                    key: key.to_string(),
                });
            }
            a.choices[index(op)] = if value == "fixed" {
                if !FIXED.iter().any(|&(o, _)| o == op) {
                    return Err(AlgorithmsError::FixedNotModelled(word.to_string()));
                }
                Choice::Fixed
            } else {
                let n: u32 = value
                    .parse()
                    .ok()
                    .filter(|_| value.bytes().all(|b| b.is_ascii_digit()))
                    .ok_or_else(|| AlgorithmsError::NotANumber {
                        word: word.to_string(),
                        value: value.to_string(),
                    })?;
                if !expandable(op, n) {
                    return Err(AlgorithmsError::NotExpanded {
                        word: word.to_string(),
                        key: key.to_string(),
                        n,
                    });
                }
                Choice::Pinned(n)
            };
        }
        Ok(a)
    }
}

/// Why a trace header's collective algorithms cannot be replayed
/// ([`Algorithms::parse`]); each names the `name=value` word at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AlgorithmsError {
    /// The name before `=` is no collective's.
    #[error("`{word}`: no collective is called {key}")]
    Unknown {
        /// The `name=value` word.
        word: String,
        /// Its name.
        key: String,
    },
    /// A collective given twice.
    #[error("`{word}`: {key} is named twice")]
    Twice {
        /// The second `name=value` word.
        word: String,
        /// The collective's name.
        key: String,
    },
    /// `fixed` for a collective whose fixed rules the replay does not
    /// model (the word).
    #[error("`{0}`: the replay models Open MPI's fixed rules only for alltoall and alltoallv")]
    FixedNotModelled(String),
    /// A value that is neither an algorithm's number nor `fixed`.
    #[error("`{word}`: {value} is neither a number nor `fixed`")]
    NotANumber {
        /// The `name=value` word.
        word: String,
        /// Its value.
        value: String,
    },
    /// An algorithm (Open MPI's number for it) the replay does not
    /// expand into messages.
    #[error("`{word}`: the replay does not expand {key} algorithm {n}")]
    NotExpanded {
        /// The `name=value` word.
        word: String,
        /// The collective's name.
        key: String,
        /// Open MPI's number of the algorithm.
        n: u32,
    },
}

/// Open MPI 4.1's number of the linear `MPI_Alltoall` (the
/// `coll_tuned_alltoall_algorithm` MCA parameter's values, as
/// `coll_tuned_alltoall_decision.c` lists them).
pub const ALLTOALL_LINEAR: u32 = 1;
/// The pairwise `MPI_Alltoall` (see [`ALLTOALL_LINEAR`]).
pub const ALLTOALL_PAIRWISE: u32 = 2;
/// The modified Bruck `MPI_Alltoall` (see [`ALLTOALL_LINEAR`]).
pub const ALLTOALL_BRUCK: u32 = 3;
/// The linear `MPI_Alltoall` with synchronous sends (see
/// [`ALLTOALL_LINEAR`]).
pub const ALLTOALL_LINEAR_SYNC: u32 = 4;
/// The two-process `MPI_Alltoall` (see [`ALLTOALL_LINEAR`]).
pub const ALLTOALL_TWO_PROC: u32 = 5;
/// Open MPI 4.1's number of the basic linear `MPI_Alltoallv` (the
/// `coll_tuned_alltoallv_algorithm` MCA parameter's values).
pub const ALLTOALLV_BASIC_LINEAR: u32 = 1;
/// The pairwise `MPI_Alltoallv` (see [`ALLTOALLV_BASIC_LINEAR`]).
pub const ALLTOALLV_PAIRWISE: u32 = 2;

/// Open MPI 4.1's fixed choice for `MPI_Alltoall` as its source's
/// if-chains read (`ompi_coll_tuned_alltoall_intra_dec_fixed`,
/// `coll_tuned_decision_fixed.c`): per range of rank counts (its largest),
/// the algorithm below each block size, bytes, and the one beyond.
const ALLTOALL_DECISIONS: &[Decision] = &[
    // up to 2 ranks
    (
        2,
        &[
            (2, ALLTOALL_PAIRWISE),
            (4, ALLTOALL_TWO_PROC),
            (16, ALLTOALL_PAIRWISE),
            (64, ALLTOALL_TWO_PROC),
            (256, ALLTOALL_PAIRWISE),
            (4 * KIB, ALLTOALL_TWO_PROC),
            (32 * KIB, ALLTOALL_PAIRWISE),
            (256 * KIB, ALLTOALL_LINEAR_SYNC),
            (1024 * KIB, ALLTOALL_TWO_PROC),
        ],
        ALLTOALL_PAIRWISE,
    ),
    // up to 7 ranks
    (
        7,
        &[
            (8 * KIB, ALLTOALL_LINEAR_SYNC),
            (16 * KIB, ALLTOALL_LINEAR),
            (64 * KIB, ALLTOALL_LINEAR_SYNC),
            (512 * KIB, ALLTOALL_LINEAR),
            (1024 * KIB, ALLTOALL_PAIRWISE),
        ],
        ALLTOALL_LINEAR,
    ),
    // up to 15 ranks
    (15, &[(256 * KIB, ALLTOALL_LINEAR_SYNC)], ALLTOALL_LINEAR),
    // up to 31 ranks
    (
        31,
        &[
            (4, ALLTOALL_LINEAR_SYNC),
            (512, ALLTOALL_BRUCK),
            (8 * KIB, ALLTOALL_LINEAR_SYNC),
            (32 * KIB, ALLTOALL_LINEAR),
            (256 * KIB, ALLTOALL_LINEAR_SYNC),
            (512 * KIB, ALLTOALL_LINEAR),
        ],
        ALLTOALL_LINEAR_SYNC,
    ),
    // up to 63 ranks
    (
        63,
        &[(512, ALLTOALL_BRUCK), (512 * KIB, ALLTOALL_LINEAR)],
        ALLTOALL_LINEAR_SYNC,
    ),
    // up to 127 ranks
    (
        127,
        &[
            (KIB, ALLTOALL_BRUCK),
            (2 * KIB, ALLTOALL_LINEAR),
            (4 * KIB, ALLTOALL_LINEAR_SYNC),
            (256 * KIB, ALLTOALL_LINEAR),
        ],
        ALLTOALL_PAIRWISE,
    ),
    // up to 255 ranks
    (
        255,
        &[
            (KIB, ALLTOALL_BRUCK),
            (2 * KIB, ALLTOALL_LINEAR_SYNC),
            (256 * KIB, ALLTOALL_LINEAR),
        ],
        ALLTOALL_PAIRWISE,
    ),
    // up to 511 ranks
    (
        511,
        &[
            (KIB, ALLTOALL_BRUCK),
            (8 * KIB, ALLTOALL_LINEAR_SYNC),
            (32 * KIB, ALLTOALL_LINEAR),
        ],
        ALLTOALL_PAIRWISE,
    ),
    // up to 1023 ranks
    (
        1023,
        &[
            (512, ALLTOALL_BRUCK),
            (8 * KIB, ALLTOALL_LINEAR_SYNC),
            (16 * KIB, ALLTOALL_LINEAR),
            (128 * KIB, ALLTOALL_LINEAR_SYNC),
            (256 * KIB, ALLTOALL_LINEAR),
        ],
        ALLTOALL_PAIRWISE,
    ),
    // up to 2047 ranks
    (
        2047,
        &[
            (512, ALLTOALL_BRUCK),
            (KIB, ALLTOALL_LINEAR_SYNC),
            (2 * KIB, ALLTOALL_LINEAR),
            (16 * KIB, ALLTOALL_LINEAR_SYNC),
            (256 * KIB, ALLTOALL_LINEAR),
        ],
        ALLTOALL_LINEAR_SYNC,
    ),
    // up to 4095 ranks
    (
        4095,
        &[
            (KIB, ALLTOALL_BRUCK),
            (4 * KIB, ALLTOALL_LINEAR_SYNC),
            (8 * KIB, ALLTOALL_LINEAR),
            (128 * KIB, ALLTOALL_LINEAR_SYNC),
        ],
        ALLTOALL_LINEAR,
    ),
    // more ranks
    (
        u32::MAX,
        &[
            (2 * KIB, ALLTOALL_BRUCK),
            (8 * KIB, ALLTOALL_LINEAR_SYNC),
            (16 * KIB, ALLTOALL_LINEAR),
            (32 * KIB, ALLTOALL_LINEAR_SYNC),
            (64 * KIB, ALLTOALL_LINEAR),
        ],
        ALLTOALL_LINEAR_SYNC,
    ),
];

/// One range of rank counts of [`ALLTOALL_DECISIONS`]: its largest rank
/// count, the algorithm below each block size (bytes), and the one beyond.
type Decision = (u32, &'static [(u64, u32)], u32);

/// A KiB, as the decision table counts bytes.
const KIB: u64 = 1024;

/// Open MPI 4.1's fixed choice for `MPI_Alltoall` on `size` ranks with
/// `block` bytes per peer ([`ALLTOALL_DECISIONS`]): one of the
/// `ALLTOALL_` numbers.
pub fn alltoall_fixed(size: u32, block: u64) -> u32 {
    let &(_, table, beyond) = (ALLTOALL_DECISIONS.iter())
        .find(|&&(most, _, _)| size <= most)
        .unwrap_or(&ALLTOALL_DECISIONS[ALLTOALL_DECISIONS.len() - 1]);
    table
        .iter()
        .find(|&&(below, _)| block < below)
        .map_or(beyond, |&(_, alg)| alg)
}

/// Open MPI 4.1's fixed choice for `MPI_Alltoallv` on `size` ranks
/// (`ompi_coll_tuned_alltoallv_intra_dec_fixed`; it looks at the size
/// only): [`ALLTOALLV_BASIC_LINEAR`] or [`ALLTOALLV_PAIRWISE`].
pub fn alltoallv_fixed(size: u32) -> u32 {
    match size {
        0..=3 | 64..=127 | 256..=1023 => ALLTOALLV_PAIRWISE,
        _ => ALLTOALLV_BASIC_LINEAR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The choices Open MPI 4.1.4 made on this machine for IS's calls
    /// (pml monitoring, docs/qemu.md): 4-byte blocks by linear_sync at 4
    /// ranks and by the modified Bruck algorithm at 16 and 64; Alltoallv
    /// basic linear at 16 and pairwise at 64.
    #[test]
    fn the_fixed_rules_give_what_open_mpi_chose() {
        assert_eq!(alltoall_fixed(4, 4), 4);
        assert_eq!(alltoall_fixed(16, 4), 3);
        assert_eq!(alltoall_fixed(64, 4), 3);
        assert_eq!(alltoallv_fixed(16), 1);
        assert_eq!(alltoallv_fixed(64), 2);
        // Edges of the source's ranges.
        assert_eq!(alltoall_fixed(16, 3), 4);
        assert_eq!(alltoall_fixed(16, 511), 3);
        assert_eq!(alltoall_fixed(16, 512), 4);
        assert_eq!(alltoall_fixed(64, 1 << 20), 2);
        assert_eq!(alltoall_fixed(2, 3), 5);
        assert_eq!(alltoall_fixed(5000, 1 << 20), 4);
        assert_eq!(alltoallv_fixed(3), 2);
        assert_eq!(alltoallv_fixed(4), 1);
        assert_eq!(alltoallv_fixed(63), 1);
        assert_eq!(alltoallv_fixed(128), 1);
        assert_eq!(alltoallv_fixed(1024), 1);
    }

    #[test]
    fn the_header_reads_back_and_old_pins_still_read() {
        let a = Algorithms::default();
        assert_eq!(
            a.header(),
            "barrier=3 bcast=6 reduce=5 allreduce=3 alltoall=fixed alltoallv=fixed \
             allgather=4 allgatherv=3 gather=1 scatter=1"
        );
        let name = format!("fsin-rs MPI trace; Open MPI coll_tuned {}", a.header());
        assert_eq!(Algorithms::parse(&name), Ok(a));
        // The header of the traces taken before alltoall(v) were left to
        // the fixed rules.
        let old = Algorithms::parse(
            "fsin-rs MPI trace; Open MPI coll_tuned barrier=3 bcast=6 reduce=5 allreduce=3 \
             alltoall=2 alltoallv=2 allgather=4 allgatherv=3 gather=1 scatter=1",
        )
        .unwrap();
        assert_eq!(old.choice(Collective::Alltoall), Choice::Pinned(2));
        assert_eq!(old.choice(Collective::Alltoallv), Choice::Pinned(2));
        assert_eq!(old.choice(Collective::Barrier), Choice::Pinned(3));
        assert_eq!(
            Algorithms::parse("a trace of someone else's; coll_tuned_x=1").unwrap(),
            Algorithms::default()
        );
        // The words end at the first one without `=`.
        let a = Algorithms::parse("coll_tuned alltoall=5 and then scan=1").unwrap();
        assert_eq!(a.choice(Collective::Alltoall), Choice::Pinned(5));
    }

    #[test]
    fn headers_the_replay_cannot_follow_are_refused() {
        for (name, what) in [
            (
                "coll_tuned barrier=4",
                "does not expand barrier algorithm 4",
            ),
            ("coll_tuned bcast=fixed", "fixed rules only for"),
            ("coll_tuned alltoall=two", "neither a number"),
            ("coll_tuned scan=1", "no collective is called scan"),
            (
                "coll_tuned alltoall=6",
                "does not expand alltoall algorithm 6",
            ),
            ("coll_tuned alltoall=+3", "neither a number"),
            ("coll_tuned alltoall=3 alltoall=2", "named twice"),
        ] {
            let e = Algorithms::parse(name).unwrap_err().to_string();
            assert!(e.contains(what), "{name}: {e}");
        }
    }
}
