//! The layout of lines that the slice barrier and the QEMU slice board
//! share: header, broadcast, arrivals, then a slot per participant.

use std::io;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::atomic::AtomicU64;

use crate::{Atomics, Lines};

/// How many participants have arrived at a round: the count in the low 32
/// bits of `tagged`, the round's tag in the high ones, and how many are
/// expected. The arrivals line of a [`Region`].
#[repr(C, align(64))]
pub struct Arrivals {
    /// The round's tag (high 32 bits) and the arrivals so far (low 32).
    pub tagged: AtomicU64,
    /// Participants the round waits for.
    pub expected: AtomicU64,
}

// SAFETY: a `#[repr(C, align(64))]` struct of atomics.
unsafe impl Atomics for Arrivals {}

/// Lines of a [`Region`] before its first slot: the header, the broadcast
/// line and the arrivals.
pub const SLOTS_AT: usize = 3;

/// The layout that both the slice barrier and the QEMU slice board use on
/// a [`Lines`] mapping: a header line `H` (line 0), a line `B` that one
/// side broadcasts to all (line 1), the [`Arrivals`] (line 2), and a slot
/// line `S` per participant (from line [`SLOTS_AT`]).
pub struct Region<H, B, S> {
    lines: Lines,
    slots: usize,
    layout: PhantomData<(H, B, S)>,
}

impl<H: Atomics, B: Atomics, S: Atomics> Region<H, B, S> {
    /// Creates the file `path` with `slots` slots and maps it
    /// ([`Lines::create`]).
    ///
    /// # Errors
    /// As [`Lines::create`].
    pub fn create(path: &Path, slots: usize) -> io::Result<Self> {
        Ok(Region {
            lines: Lines::create(path, SLOTS_AT + slots)?,
            slots,
            layout: PhantomData,
        })
    }

    /// Maps an existing file ([`Lines::open`]); its slots are the lines
    /// after the first [`SLOTS_AT`].
    ///
    /// # Errors
    /// As [`Lines::open`], and [`io::ErrorKind::InvalidData`] when the file
    /// has fewer than [`SLOTS_AT`] lines.
    pub fn open(path: &Path) -> io::Result<Self> {
        let lines = Lines::open(path)?;
        let slots = lines.len().checked_sub(SLOTS_AT).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} lines, fewer than the {SLOTS_AT} before the slots",
                    lines.len()
                ),
            )
        })?;
        Ok(Region {
            lines,
            slots,
            layout: PhantomData,
        })
    }

    /// The participants' slots.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// The header line.
    pub fn header(&self) -> &H {
        self.lines.at(0)
    }

    /// The broadcast line.
    pub fn broadcast(&self) -> &B {
        self.lines.at(1)
    }

    /// The arrivals line.
    pub fn arrivals(&self) -> &Arrivals {
        self.lines.at(2)
    }

    /// Slot `i`.
    ///
    /// # Panics
    /// `i` is not below [`Region::slots`] (a caller's bug: slots come from
    /// the region's own count).
    pub fn slot(&self, i: usize) -> &S {
        assert!(i < self.slots, "slot {i} of {}", self.slots);
        self.lines.at(SLOTS_AT + i)
    }
}
