//! Application kernels (thin-trees paper, section 4.3; INSEE paper, section 3.2.4):
//! synthetic traces that reproduce the communication and causality of
//! common parallel-program patterns. As in INSEE, a kernel is generated as
//! a trace (one event queue per task) and replayed like any trace, so
//! `fsin kernel` can also write it as a `.trc` file.
//!
//! `N` is the task count; the 2D/3D patterns use a virtual `k x k` (or
//! `k x k x k`) mesh of tasks, task id = `x + k*y (+ k*k*z)`.

use fsin_trace::Trace;

/// A kernel (`kernel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// All-to-all: every task sends to task `i+1, i+2, ...` (mod N), then
    /// receives from `i-1, i-2, ...`: `N (N-1)` messages.
    AllToAll,
    /// 2D wave-front (W2): a diagonal sweep from task 0 to the far corner
    /// of the `k x k` mesh and back; a task waits for its left and upper
    /// neighbours, then sends right and down (reversed on the way back):
    /// `4 k (k-1)` messages.
    Wavefront2,
    /// 3D wave-front (W3) on a `k x k x k` mesh: `6 k^2 (k-1)` messages.
    Wavefront3,
    /// 2D mesh neighbour exchange (M2): every task sends to each of its 2-4
    /// mesh neighbours, then receives from them: `4 k (k-1)` messages.
    Mesh2,
    /// 3D mesh neighbour exchange (M3), 3-6 neighbours: `6 k^2 (k-1)`.
    Mesh3,
    /// Butterfly / recursive doubling (BU), N a power of two: in stage
    /// `s` task `i` sends to `i xor 2^s` and waits for its message:
    /// `N log2 N` messages.
    Butterfly,
    /// Binary-tree reduction (BT): odd tasks send first; task `i` receives
    /// from `i + 2^s` for every `s` below its lowest set bit, then sends to
    /// `i - 2^(lowest bit)`; task 0 ends it: `N - 1` messages.
    BinaryTree,
    /// Waterfall (WF): the forward W2 sweep as a burst of messages of at
    /// most 1 KiB each (`ceil(bytes / 1024)` per link), pipelined along
    /// the causality chains: `2 k (k-1) ceil(bytes/1024)` messages.
    Waterfall,
}

/// Kernel names accepted by `kernel`, with the thin-trees paper's abbreviations.
pub const KERNELS: &[(&str, Kernel)] = &[
    ("all2all", Kernel::AllToAll),
    ("alltoall", Kernel::AllToAll),
    ("w2", Kernel::Wavefront2),
    ("wavefront", Kernel::Wavefront2),
    ("w3", Kernel::Wavefront3),
    ("m2", Kernel::Mesh2),
    ("m3", Kernel::Mesh3),
    ("bu", Kernel::Butterfly),
    ("butterfly", Kernel::Butterfly),
    ("bt", Kernel::BinaryTree),
    ("bintree", Kernel::BinaryTree),
    ("wf", Kernel::Waterfall),
    ("waterfall", Kernel::Waterfall),
];

/// Chunk size of the waterfall's bursts, in bytes (thin-trees paper: 40 KB sent as
/// 40 messages of 1 KB).
pub const WATERFALL_CHUNK: u64 = 1024;

/// The side `k` of a `dims`-dimensional virtual mesh of `n` tasks.
fn side(n: u32, dims: u32) -> Option<u32> {
    let k = (f64::from(n).powf(1.0 / f64::from(dims))).round() as u32;
    (k.pow(dims) == n && k >= 2).then_some(k)
}

/// A kernel that cannot run with the tasks given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kernel} needs {need}, not {tasks} tasks")]
pub struct TaskCountError {
    /// The kernel's name.
    pub kernel: &'static str,
    /// The task counts that work.
    pub need: &'static str,
    /// The task count asked for.
    pub tasks: u32,
}

impl Kernel {
    /// The kernel called `name` (any of its names in [`KERNELS`]).
    pub fn named(name: &str) -> Option<Kernel> {
        KERNELS.iter().find(|(n, _)| *n == name).map(|&(_, k)| k)
    }

    /// Name used in reports (the first name in [`KERNELS`]).
    pub fn name(self) -> &'static str {
        KERNELS
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("", |(n, _)| n)
    }

    /// Checks that the kernel can run with `n` tasks.
    ///
    /// # Errors
    /// [`TaskCountError`], naming the task counts that work.
    pub fn check(self, n: u32) -> Result<(), TaskCountError> {
        let need = |ok: bool, need: &'static str| {
            if ok {
                Ok(())
            } else {
                Err(TaskCountError {
                    kernel: self.name(),
                    need,
                    tasks: n,
                })
            }
        };
        match self {
            Kernel::AllToAll | Kernel::BinaryTree => need(n >= 2, "at least 2 tasks"),
            Kernel::Butterfly => need(n >= 2 && n.is_power_of_two(), "a power-of-two task count"),
            Kernel::Wavefront2 | Kernel::Mesh2 | Kernel::Waterfall => {
                need(side(n, 2).is_some(), "a square task count k*k, k >= 2")
            }
            Kernel::Wavefront3 | Kernel::Mesh3 => {
                need(side(n, 3).is_some(), "a cubic task count k*k*k, k >= 2")
            }
        }
    }

    /// The kernel's trace for `n` tasks and messages of `bytes` bytes.
    ///
    /// # Panics
    /// If [`Kernel::check`] refuses `n`.
    pub fn trace(self, n: u32, bytes: u64) -> Trace {
        if let Err(e) = self.check(n) {
            panic!("{e}");
        }
        let name = format!("kernel {} ({n} tasks, {bytes} bytes)", self.name());
        let mut t = Trace::new(&name, n as usize);
        match self {
            Kernel::AllToAll => {
                for i in 0..n {
                    for r in 1..n {
                        t.push(i, send((i + r) % n, 0, bytes), 0);
                    }
                    for r in 1..n {
                        t.push(i, recv((i + n - r) % n, 0, bytes), 0);
                    }
                }
            }
            Kernel::Wavefront2 | Kernel::Wavefront3 => {
                let d = if self == Kernel::Wavefront2 { 2 } else { 3 };
                let k = side(n, d).unwrap_or(2);
                for i in 0..n {
                    let (down, up) = neighbours(i, k, d);
                    sweep(&mut t, i, &down, &up, 0, bytes);
                    sweep(&mut t, i, &up, &down, 1, bytes);
                }
            }
            Kernel::Mesh2 | Kernel::Mesh3 => {
                let d = if self == Kernel::Mesh2 { 2 } else { 3 };
                let k = side(n, d).unwrap_or(2);
                for i in 0..n {
                    let (down, up) = neighbours(i, k, d);
                    let all: Vec<u32> = down.iter().chain(&up).copied().collect();
                    for &j in &all {
                        t.push(i, send(j, 0, bytes), 0);
                    }
                    for &j in &all {
                        t.push(i, recv(j, 0, bytes), 0);
                    }
                }
            }
            Kernel::Butterfly => {
                for i in 0..n {
                    for s in 0..n.trailing_zeros() {
                        let j = i ^ (1 << s);
                        t.push(i, send(j, s, bytes), 0);
                        t.push(i, recv(j, s, bytes), 0);
                    }
                }
            }
            Kernel::BinaryTree => {
                for i in 0..n {
                    let mut s = 0;
                    while (1u64 << s) < u64::from(n) {
                        let step = 1u32 << s;
                        if i & step != 0 {
                            t.push(i, send(i - step, s, bytes), 0);
                            break;
                        }
                        if i + step < n {
                            t.push(i, recv(i + step, s, bytes), 0);
                        }
                        s += 1;
                    }
                }
            }
            Kernel::Waterfall => {
                let k = side(n, 2).unwrap_or(2);
                let chunks = bytes.div_ceil(WATERFALL_CHUNK).max(1);
                for i in 0..n {
                    let (down, up) = neighbours(i, k, 2);
                    for c in 0..chunks {
                        let size = (bytes - c * WATERFALL_CHUNK).min(WATERFALL_CHUNK);
                        sweep(&mut t, i, &down, &up, c as u32, size);
                    }
                }
            }
        }
        t
    }
}

fn send(dst: u32, tag: u32, bytes: u64) -> fsin_trace::Event {
    fsin_trace::Event::Send { dst, tag, bytes }
}

fn recv(src: u32, tag: u32, bytes: u64) -> fsin_trace::Event {
    fsin_trace::Event::Recv { src, tag, bytes }
}

/// One wave-front step of task `i`: wait for every task in `from`, then
/// send to every task in `to`.
fn sweep(t: &mut Trace, i: u32, from: &[u32], to: &[u32], tag: u32, bytes: u64) {
    for &j in from {
        t.push(i, recv(j, tag, bytes), 0);
    }
    for &j in to {
        t.push(i, send(j, tag, bytes), 0);
    }
}

/// Mesh neighbours of task `i` in a `k^d` virtual mesh: those one step
/// down (towards task 0) and one step up in each dimension.
fn neighbours(i: u32, k: u32, d: u32) -> (Vec<u32>, Vec<u32>) {
    let mut down = Vec::new();
    let mut up = Vec::new();
    let mut stride = 1;
    for _ in 0..d {
        let c = (i / stride) % k;
        if c > 0 {
            down.push(i - stride);
        }
        if c + 1 < k {
            up.push(i + stride);
        }
        stride *= k;
    }
    (down, up)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsin_trace::Event;

    fn counts(t: &Trace) -> (Vec<usize>, Vec<usize>) {
        let f = |want: fn(&Event) -> bool| {
            t.tasks
                .iter()
                .map(|q| q.iter().filter(|e| want(e)).count())
                .collect()
        };
        (
            f(|e| matches!(e, Event::Send { .. })),
            f(|e| matches!(e, Event::Recv { .. })),
        )
    }

    /// Mesh degree of task i in a k^d mesh, counted independently: 2 per
    /// dimension minus one per coordinate on a face.
    fn degree(i: u32, k: u32, d: u32) -> usize {
        (0..d)
            .map(|dim| {
                let c = (i / k.pow(dim)) % k;
                2 - usize::from(c == 0) - usize::from(c == k - 1)
            })
            .sum()
    }

    #[test]
    fn message_counts_per_task_match_the_closed_forms() {
        let (s, r) = counts(&Kernel::AllToAll.trace(6, 10));
        assert_eq!((s, r), (vec![5; 6], vec![5; 6]));
        let (s, r) = counts(&Kernel::Butterfly.trace(16, 10));
        assert_eq!((s, r), (vec![4; 16], vec![4; 16]));
        for (kern, k, d, per_degree) in [
            (Kernel::Wavefront2, 4u32, 2u32, 1usize),
            (Kernel::Mesh2, 5, 2, 1),
            (Kernel::Wavefront3, 3, 3, 1),
            (Kernel::Mesh3, 3, 3, 1),
        ] {
            let n = k.pow(d);
            let (s, r) = counts(&kern.trace(n, 10));
            let want: Vec<usize> = (0..n).map(|i| per_degree * degree(i, k, d)).collect();
            assert_eq!(s, want, "{kern:?}");
            assert_eq!(r, want, "{kern:?}");
            // Totals: 2 d k^(d-1) (k-1) messages (one per direction of
            // every mesh edge).
            let edges = (d * k.pow(d - 1) * (k - 1)) as usize;
            assert_eq!(s.iter().sum::<usize>(), 2 * edges, "{kern:?}");
        }
        // Waterfall: one forward sweep per 1 KiB chunk (2500 B -> 3).
        let (s, _) = counts(&Kernel::Waterfall.trace(9, 2500));
        let want: Vec<usize> = (0..9)
            .map(|i| 3 * (degree(i, 3, 2) - usize::from(i % 3 > 0) - usize::from(i >= 3)))
            .collect();
        assert_eq!(s, want);
        assert_eq!(s.iter().sum::<usize>(), 3 * 2 * 3 * 2);
    }

    #[test]
    fn binary_tree_reduces_to_task_zero() {
        // 8 tasks: 1,3,5,7 -> 0,2,4,6; 2,6 -> 0,4; 4 -> 0.
        let t = Kernel::BinaryTree.trace(8, 64);
        let (s, r) = counts(&t);
        assert_eq!(s, [0, 1, 1, 1, 1, 1, 1, 1]);
        assert_eq!(r, [3, 0, 1, 0, 2, 0, 1, 0]);
        assert_eq!(t.tasks[0], [recv(1, 0, 64), recv(2, 1, 64), recv(4, 2, 64)]);
        assert_eq!(t.tasks[6], [recv(7, 0, 64), send(4, 1, 64)]);
        // Not a power of two: every task but 0 still sends once.
        let (s, r) = counts(&Kernel::BinaryTree.trace(6, 1));
        assert_eq!(s.iter().sum::<usize>(), 5);
        assert_eq!(r.iter().sum::<usize>(), 5);
    }

    #[test]
    fn task_counts_are_checked() {
        assert!(Kernel::Butterfly
            .check(12)
            .unwrap_err()
            .to_string()
            .contains("power-of-two"));
        assert!(Kernel::Wavefront2
            .check(10)
            .unwrap_err()
            .to_string()
            .contains("square"));
        assert!(Kernel::Mesh3.check(27).is_ok());
        assert!(Kernel::Mesh3.check(28).is_err());
    }
}
