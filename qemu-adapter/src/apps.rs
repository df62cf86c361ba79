//! Named applications of `fsin qemu --app` on the MPI guest image: the
//! shell command guest 0 runs, and how its output becomes `app.results`.
//!
//! - [`App::Hpcc`]: HPC Challenge 1.5 (Debian's `hpcc`, Open MPI, the
//!   reference BLAS) on every guest, one rank each, with an input file of
//!   ours: HPL order `size` (default [`HPCC_ORDER`]), blocks of 32, the
//!   most square P x Q grid with P * Q = guests. Results: the key=value
//!   lines of `hpccoutf.txt`'s summary section (`HPL_Tflops`,
//!   `AvgPingPongLatency_usec`, `RandomlyOrderedRingBandwidth_GBytes`, ...;
//!   numbers as numbers).
//! - [`App::Netpipe`]: NetPIPE 3.7 (`NPopenmpi`) between node0 and node1,
//!   message sizes from 1 byte to `size` bytes (default
//!   [`NETPIPE_MAX_BYTES`]) with NetPIPE's +-3-byte perturbations. Results:
//!   `points` (bytes, Mbps, one-way time in microseconds, from `np.out`),
//!   `latency_us` (the smallest message's time) and `max_mbps`.
//! - [`App::Is`]: `fsin-is` (ours, `examples/qemu/mpi/is.c`, built into
//!   the MPI image), the communication of NPB IS on every guest, one rank
//!   each: per iteration an `MPI_Allreduce` of the bucket sizes, an
//!   `MPI_Alltoall` of the counts and an `MPI_Alltoallv` of the keys;
//!   `size` keys per rank (default [`IS_KEYS_PER_RANK`]), 10 iterations,
//!   then a check of the global order. Results: `ranks`, `keys`,
//!   `iterations`, `verified` (1: sorted, nothing lost) and `time_s` (the
//!   iterations, guest seconds).
//! - [`App::Cg`]: `fsin-cg` (ours, `examples/qemu/mpi/cg.c`), the
//!   communication of NPB CG on every guest: 25 conjugate-gradient
//!   iterations on a random sparse symmetric matrix of `size` rows per rank
//!   (default [`CG_ROWS_PER_RANK`]); each matrix-vector product exchanges
//!   the vector entries each rank needs with `MPI_Isend`/`MPI_Irecv` to its
//!   partners only (irregular point-to-point), and each iteration takes two
//!   `MPI_Allreduce` dot products. Results: `ranks`, `rows`, `nonzeros`,
//!   `iterations`, `residual`, `verified` (1: residual below 1e-6) and
//!   `time_s`.

use serde::Serialize;
use serde_json::{json, Map, Value};

/// Default HPL matrix order of `--app hpcc`: small enough that four guests
/// finish in minutes of wall time on two cores.
pub const HPCC_ORDER: u32 = 256;
/// Default largest NetPIPE message, bytes.
pub const NETPIPE_MAX_BYTES: u32 = 65536;
/// Default keys per rank of `--app is`: 2^12, so that 16 guests sort NPB
/// IS class S's 2^16 keys.
pub const IS_KEYS_PER_RANK: u32 = 4096;
/// Default matrix rows per rank of `--app cg`.
pub const CG_ROWS_PER_RANK: u32 = 512;

/// A named application.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum App {
    /// HPC Challenge on every guest.
    Hpcc,
    /// NetPIPE between node0 and node1.
    Netpipe,
    /// An integer sort across every guest (NPB IS's all-to-all exchanges
    /// and reductions).
    Is,
    /// Conjugate gradient across every guest (NPB CG's irregular
    /// point-to-point exchanges and reductions).
    Cg,
}

/// A named application that cannot run as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AppError {
    /// `--app netpipe` on fewer than two guests: the guest count given.
    #[error("--app netpipe needs two guests (--guests {0})")]
    TooFewGuests(u32),
    /// `--app-size` outside the application's range.
    #[error("--app-size {size}: {app} takes {range}")]
    BadSize {
        /// The application's name, as `--app` takes it.
        app: &'static str,
        /// The size given: an HPL order (hpcc), bytes (netpipe), keys per
        /// rank (is) or matrix rows per rank (cg).
        size: u32,
        /// The sizes the application takes, for people (`an HPL order of
        /// 32..=20000`).
        range: &'static str,
    },
}

/// P x Q with P * Q = `n` and P <= Q as close as can be.
fn grid(n: u32) -> (u32, u32) {
    let p = (1..=n)
        .take_while(|p| p * p <= n)
        .filter(|p| n.is_multiple_of(*p))
        .last()
        .unwrap_or(1);
    (p, n / p)
}

/// `hpccinf.txt` for an order-`order` problem on a `p` x `q` grid (HPCC's
/// `_hpccinf.txt` with one size, one block size and one grid).
fn hpcc_input(order: u32, p: u32, q: u32) -> String {
    format!(
        "HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
{order}          Ns
1            # of NBs
32           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
{p}            Ps
{q}            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                               Number of additional problem sizes for PTRANS
1200 10000 30000                values of N
0                               number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64        values of NB
"
    )
}

impl App {
    /// The name `--app` takes.
    pub fn name(self) -> &'static str {
        match self {
            App::Hpcc => "hpcc",
            App::Netpipe => "netpipe",
            App::Is => "is",
            App::Cg => "cg",
        }
    }

    /// The shell command guest 0 runs for `guests` guests; `size` is the
    /// HPL order (hpcc), the largest message in bytes (netpipe), the keys
    /// per rank (is) or the matrix rows per rank (cg), `None` for the
    /// default.
    ///
    /// # Errors
    /// NetPIPE with fewer than two guests; a size out of range (hpcc:
    /// 32..=20000; netpipe: 1..=16 MiB; is: 1..=2^24; cg: 1..=2^20).
    pub fn command(self, guests: u32, size: Option<u32>) -> Result<String, AppError> {
        if self == App::Netpipe && guests < 2 {
            return Err(AppError::TooFewGuests(guests));
        }
        let size = self.size(size)?;
        Ok(match self {
            App::Hpcc => {
                let (p, q) = grid(guests);
                format!(
                    "mkdir -p /root/hpcc && cd /root/hpcc || exit 1
cat > hpccinf.txt <<'EOF'
{}EOF
mpirun --hostfile /etc/fsin/hostfile -np {guests} hpcc
status=$?
sed -n '/^Begin of Summary section/,/^End of Summary section/p' hpccoutf.txt
exit $status",
                    hpcc_input(size, p, q)
                )
            }
            App::Netpipe => format!(
                "cd /root || exit 1
mpirun --host node0,node1 -np 2 NPopenmpi -l 1 -u {size} -o /root/np.out > /root/np.log 2>&1
status=$?
[ $status = 0 ] || tail -n 20 /root/np.log
echo 'NetPIPE np.out (bytes Mbps seconds):'
cat /root/np.out
exit $status"
            ),
            // Our kernels: their size, then NPB's iteration count.
            App::Is => kernel_command(guests, "fsin-is", size, 10),
            App::Cg => kernel_command(guests, "fsin-cg", size, 25),
        })
    }

    /// The problem size of a run: `size`, else the application's default.
    ///
    /// # Errors
    /// [`AppError::BadSize`] outside the application's range.
    fn size(self, size: Option<u32>) -> Result<u32, AppError> {
        let (default, range, what) = match self {
            App::Hpcc => (HPCC_ORDER, 32..=20_000, "an HPL order of 32..=20000"),
            App::Netpipe => (
                NETPIPE_MAX_BYTES,
                1..=16 << 20,
                "a largest message of 1..=16777216 bytes",
            ),
            App::Is => (IS_KEYS_PER_RANK, 1..=1 << 24, "1..=16777216 keys per rank"),
            App::Cg => (CG_ROWS_PER_RANK, 1..=1 << 20, "1..=1048576 rows per rank"),
        };
        let size = size.unwrap_or(default);
        if !range.contains(&size) {
            return Err(AppError::BadSize {
                app: self.name(),
                size,
                range: what,
            });
        }
        Ok(size)
    }

    /// `app.results` from the command's output.
    pub fn results(self, output: &str) -> Value {
        match self {
            App::Hpcc => hpcc_results(output),
            App::Netpipe => netpipe_results(output),
            App::Is => kernel_results(output, "FSIN-IS "),
            App::Cg => kernel_results(output, "FSIN-CG "),
        }
    }
}

/// The key=value lines of HPCC's summary section.
fn hpcc_results(output: &str) -> Value {
    let mut m = Map::new();
    let summary = output
        .lines()
        .skip_while(|l| !l.starts_with("Begin of Summary section"))
        .take_while(|l| !l.starts_with("End of Summary section"));
    for line in summary {
        if let Some((k, v)) = line.split_once('=') {
            let v = v.trim();
            let value = match v.parse::<f64>() {
                Ok(x) if x.is_finite() => json!(x),
                _ => json!(v),
            };
            m.insert(k.trim().to_string(), value);
        }
    }
    Value::Object(m)
}

/// `mpirun` of our kernel `binary` (in the MPI image) on every guest with
/// its problem size and iteration count.
fn kernel_command(guests: u32, binary: &str, size: u32, iterations: u32) -> String {
    format!(
        "cd /root || exit 1\nmpirun --hostfile /etc/fsin/hostfile -np {guests} {binary} {size} {iterations}"
    )
}

/// The key=value fields of the kernel's result line (`FSIN-IS ...`,
/// `FSIN-CG ...`: `tag`), as numbers.
fn kernel_results(output: &str, tag: &str) -> Value {
    let m: Map<String, Value> = output
        .lines()
        .find_map(|l| l.strip_prefix(tag))
        .into_iter()
        .flat_map(str::split_whitespace)
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            let v: f64 = v.parse().ok().filter(|v: &f64| v.is_finite())?;
            Some((k.to_string(), json!(v)))
        })
        .collect();
    Value::Object(m)
}

/// NetPIPE's `np.out` lines (bytes, Mbps, seconds one way) as points.
fn netpipe_results(output: &str) -> Value {
    let points: Vec<Value> = output
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace().map(str::parse::<f64>);
            match (w.next(), w.next(), w.next(), w.next()) {
                (Some(Ok(bytes)), Some(Ok(mbps)), Some(Ok(s)), None)
                    if bytes >= 1.0 && mbps.is_finite() && s.is_finite() =>
                {
                    Some(json!({ "bytes": bytes as u64, "mbps": mbps, "time_us": s * 1e6 }))
                }
                _ => None,
            }
        })
        .collect();
    let latency = points.first().and_then(|p| p["time_us"].as_f64());
    let max = points
        .iter()
        .filter_map(|p| p["mbps"].as_f64())
        .reduce(f64::max);
    json!({ "points": points, "latency_us": latency, "max_mbps": max })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_are_as_square_as_the_guest_count_allows() {
        assert_eq!(grid(1), (1, 1));
        assert_eq!(grid(2), (1, 2));
        assert_eq!(grid(4), (2, 2));
        assert_eq!(grid(6), (2, 3));
        assert_eq!(grid(8), (2, 4));
        assert_eq!(grid(7), (1, 7));
    }

    #[test]
    fn hpcc_input_has_hpcc_s_line_layout() {
        let text = hpcc_input(256, 2, 4);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 36, "HPCC reads 36 lines");
        assert!(lines[5].starts_with("256 "));
        assert!(lines[10].starts_with("2 "));
        assert!(lines[11].starts_with("4 "));
        assert!(lines[31].starts_with("#####"), "line 32 is the separator");
    }

    #[test]
    fn named_commands_check_their_inputs() {
        assert_eq!(
            App::Netpipe.command(1, None),
            Err(AppError::TooFewGuests(1))
        );
        assert!(App::Hpcc.command(4, Some(8)).is_err());
        let hpcc = App::Hpcc.command(4, None).unwrap();
        assert!(hpcc.contains("-np 4 hpcc"));
        assert!(hpcc.contains("256          Ns"));
        let np = App::Netpipe.command(2, Some(1024)).unwrap();
        assert!(np.contains("-u 1024"));
    }

    #[test]
    fn hpcc_summary_lines_become_results() {
        let out = "noise=1\nBegin of Summary section.\nVersionMajor=1\nHPL_Tflops=1.5e-05\nCommWorldProcs=4\nsuccess=1\nEnd of Summary section.\nafter=2\n";
        let r = hpcc_results(out);
        assert_eq!(r["HPL_Tflops"], 1.5e-5);
        assert_eq!(r["CommWorldProcs"], 4.0);
        assert!(r.get("noise").is_none() && r.get("after").is_none());
    }

    #[test]
    fn the_kernels_result_lines_become_results() {
        let r = kernel_results(
            "warning\nFSIN-IS ranks=4 keys=16384 iterations=10 verified=1 time_s=0.103647\n",
            "FSIN-IS ",
        );
        assert_eq!(r["keys"], 16384.0);
        assert_eq!(r["verified"], 1.0);
        assert_eq!(r["time_s"], 0.103647);
        assert_eq!(kernel_results("no line", "FSIN-IS "), json!({}));
        let cg = kernel_results(
            "FSIN-CG ranks=4 rows=2048 nonzeros=18420 iterations=25 residual=2.630e-11 verified=1 time_s=1.29\n",
            "FSIN-CG ",
        );
        assert_eq!(cg["residual"], 2.63e-11);
        assert_eq!(cg["nonzeros"], 18420.0);
        assert!(App::Cg
            .command(4, None)
            .unwrap()
            .contains("-np 4 fsin-cg 512 25"));
        assert!(App::Is.command(4, Some(0)).is_err());
        assert!(App::Is
            .command(4, None)
            .unwrap()
            .contains("-np 4 fsin-is 4096 10"));
    }

    #[test]
    fn netpipe_lines_become_points() {
        let out = "NetPIPE np.out (bytes Mbps seconds):\n       1   0.190830   0.00003998\n       4   0.700000   0.00004359\n 0: 1 bytes 10 times\n";
        let r = netpipe_results(out);
        assert_eq!(r["points"].as_array().unwrap().len(), 2);
        assert_eq!(r["points"][1]["bytes"], 4);
        assert!((r["latency_us"].as_f64().unwrap() - 39.98).abs() < 1e-9);
        assert_eq!(r["max_mbps"], 0.7);
    }
}
