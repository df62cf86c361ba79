//! Placement of application tasks onto network nodes (INSEE paper, section
//! 3.2.4 and "workload placement"; INSEE's trace.c). A run holds one or
//! more *jobs*: instances of traces or kernels, each with its own tasks.
//! Tasks are numbered globally, job after job (`t = offset of the job +
//! task`), and the placement maps that global number to a node, as INSEE
//! does with `t = instance * trace_nodes + task`. Nodes that receive no
//! task are independent sources (background load `bg_load`).

use std::path::{Path, PathBuf};

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

/// Placement policy (`placement`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlacementKind {
    /// Task `t` on node `t` (INSEE's `consecutive` and `row`).
    Consecutive,
    /// Tasks fill the first dimension's columns: `t` goes to
    /// `x = t / rows`, `row = t mod rows` (rows = nodes / n_x).
    Column,
    /// Task `t` on node `(t + shift) mod N`.
    Shift,
    /// INSEE's shuffle spreads tasks over the nodes of different switches;
    /// with one node per router (every cube) it is `column`, as in INSEE.
    Shuffle,
    /// Distinct nodes drawn at random (seeded by `rseed`).
    Random,
    /// Job `j` in quadrant (octant in 3D) `j` of the cube: half of every
    /// dimension; at most 2^ndim jobs.
    Quadrant,
    /// 2D only: tasks in row-major order of an `n_x x n_y` grid go to the
    /// nodes along successive anti-diagonals (INSEE's diagonal placement).
    Diagonal,
    /// From a file of `node task instance` lines.
    File,
}

/// The `placement` setting: policy and its parameters
/// (`NAME[_SHIFT|_FILE][_TASKS[_INSTANCES]]`, as INSEE parses it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The policy.
    pub kind: PlacementKind,
    /// Shift of `shift` placement, in nodes.
    pub shift: u32,
    /// File of `file` placement.
    pub file: Option<PathBuf>,
    /// Tasks per instance (0: the trace's own task count).
    pub tasks: u32,
    /// Instances of each trace (0: one; `quadrant`: one per quadrant).
    pub instances: u32,
}

impl Default for Placement {
    fn default() -> Self {
        Placement {
            kind: PlacementKind::Consecutive,
            shift: 0,
            file: None,
            tasks: 0,
            instances: 0,
        }
    }
}

/// Placement names accepted by `placement`.
pub const PLACEMENTS: &[(&str, PlacementKind)] = &[
    ("consecutive", PlacementKind::Consecutive),
    ("row", PlacementKind::Consecutive),
    ("column", PlacementKind::Column),
    ("shift", PlacementKind::Shift),
    ("shuffle", PlacementKind::Shuffle),
    ("random", PlacementKind::Random),
    ("quadrant", PlacementKind::Quadrant),
    ("diagonal", PlacementKind::Diagonal),
    ("file", PlacementKind::File),
];

/// A placement that cannot be made.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlacementError {
    /// More tasks than nodes.
    #[error("{tasks} tasks do not fit the network's {nodes} nodes")]
    TooMany {
        /// Tasks to place.
        tasks: usize,
        /// Nodes of the network.
        nodes: usize,
    },
    /// The quadrant policy does not fit the network (why).
    #[error("quadrant placement: {0}")]
    Quadrant(String),
    /// The diagonal policy does not fit the network (why).
    #[error("diagonal placement: {0}")]
    Diagonal(String),
    /// A placement file's line that cannot be used.
    #[error("placement file {file}:{line}: {what}")]
    File {
        /// The file.
        file: String,
        /// The line, from 1.
        line: usize,
        /// What is wrong.
        what: String,
    },
    /// Co-simulation places every node simulator, one instance of one
    /// task per network node ([`nodes_of_simulators`]).
    #[error("co-simulation places one node simulator on every node: {0}")]
    Simulators(String),
}

/// The network node of each node simulator of a co-simulation on a
/// network of `dims` nodes per dimension: simulator `i` is task
/// `i` of one instance of as many tasks as the network has nodes, so the
/// result is a permutation of the nodes (docs/cosim.md, "Placement").
///
/// # Errors
/// [`PlacementError`]: `_TASKS` other than the node count or more than
/// one instance ([`PlacementError::Simulators`]), or what [`place`]
/// refuses (a quadrant or diagonal layout the network does not allow, a
/// placement file that does not place every node).
pub fn nodes_of_simulators(
    p: &Placement,
    dims: &[u32],
    seed: u64,
) -> Result<Vec<u32>, PlacementError> {
    let nodes: u32 = dims.iter().product();
    if p.tasks != 0 && p.tasks != nodes {
        return Err(PlacementError::Simulators(format!(
            "{} tasks given, {nodes} nodes",
            p.tasks
        )));
    }
    if p.instances > 1 {
        return Err(PlacementError::Simulators(format!(
            "{} instances given, 1 possible",
            p.instances
        )));
    }
    let mut placed = place(p, &[nodes], dims, seed)?;
    Ok(placed.pop().unwrap_or_default())
}

/// Places the tasks of `jobs` (task count of each job, in order) on a cube
/// with `dims` nodes per dimension; returns the node of every task of every
/// job (same shape as `jobs`).
///
/// # Errors
/// [`PlacementError`]: more tasks than nodes, a quadrant or diagonal
/// layout that the network or the jobs do not allow, a placement file that
/// cannot be read, names a node/task/instance that does not exist, places
/// two tasks on one node or leaves a task without a node.
pub fn place(
    p: &Placement,
    jobs: &[u32],
    dims: &[u32],
    seed: u64,
) -> Result<Vec<Vec<u32>>, PlacementError> {
    let nodes: u32 = dims.iter().product();
    let total: usize = jobs.iter().map(|&t| t as usize).sum();
    if total > nodes as usize {
        return Err(PlacementError::TooMany {
            tasks: total,
            nodes: nodes as usize,
        });
    }
    let nx = dims[0];
    let rows = nodes / nx;
    // Node of every task from its global number (job offset + task).
    let global = |f: &dyn Fn(u32) -> u32| -> Vec<Vec<u32>> {
        let mut base = 0;
        jobs.iter()
            .map(|&n| {
                let nodes = (base..base + n).map(f).collect();
                base += n;
                nodes
            })
            .collect()
    };
    Ok(match p.kind {
        PlacementKind::Consecutive => global(&|t| t),
        PlacementKind::Shift => global(&|t| (t + p.shift) % nodes),
        PlacementKind::Column | PlacementKind::Shuffle => global(&|t| t / rows + (t % rows) * nx),
        PlacementKind::Random => {
            let mut order: Vec<u32> = (0..nodes).collect();
            order.shuffle(&mut Pcg64Mcg::seed_from_u64(seed ^ 0x91ac_e3e7));
            global(&|t| order[t as usize])
        }
        PlacementKind::Quadrant => quadrant(jobs, dims)?,
        PlacementKind::Diagonal => diagonal(jobs, dims)?,
        PlacementKind::File => {
            let file = p.file.as_deref().unwrap_or(Path::new(""));
            from_file(file, jobs, nodes)?
        }
    })
}

fn quadrant(jobs: &[u32], dims: &[u32]) -> Result<Vec<Vec<u32>>, PlacementError> {
    let q = |what: String| PlacementError::Quadrant(what);
    if dims.iter().any(|d| d % 2 != 0) {
        return Err(q(format!("every dimension must be even, not {dims:?}")));
    }
    let half: Vec<u32> = dims.iter().map(|d| d / 2).collect();
    let size: u32 = half.iter().product();
    let quadrants = 1usize << dims.len();
    if jobs.len() > quadrants {
        return Err(q(format!(
            "{} jobs for {quadrants} quadrants of a {}-D cube",
            jobs.len(),
            dims.len()
        )));
    }
    jobs.iter()
        .enumerate()
        .map(|(j, &n)| {
            if n > size {
                return Err(q(format!(
                    "{n} tasks do not fit a quadrant of {size} nodes"
                )));
            }
            Ok((0..n)
                .map(|i| {
                    // INSEE: c_d = (i / prod(half_<d)) mod half_d + bit d of j * half_d.
                    let mut id = 0;
                    let mut stride = 1;
                    let mut below = 1;
                    for (d, (&h, &full)) in half.iter().zip(dims).enumerate() {
                        let c = (i / below) % h + ((j >> d) as u32 & 1) * h;
                        id += c * stride;
                        stride *= full;
                        below *= h;
                    }
                    id
                })
                .collect())
        })
        .collect()
}

fn diagonal(jobs: &[u32], dims: &[u32]) -> Result<Vec<Vec<u32>>, PlacementError> {
    let [nx, ny] = dims else {
        return Err(PlacementError::Diagonal(format!(
            "needs a 2-D cube, not {} dimensions",
            dims.len()
        )));
    };
    if jobs.len() != 1 {
        return Err(PlacementError::Diagonal(format!(
            "takes one job, not {}",
            jobs.len()
        )));
    }
    // INSEE's walk: node i takes the task at grid position (x, y), moving
    // down-left along an anti-diagonal and starting the next one.
    let (nx, ny) = (*nx as i64, *ny as i64);
    let mut of_task = vec![0u32; (nx * ny) as usize];
    let (mut x, mut y) = (0i64, 0i64);
    for i in 0..nx * ny {
        of_task[(nx * y + x) as usize] = i as u32;
        y += 1;
        if y == ny {
            y = x + 1;
            x = nx - 1;
        } else {
            x -= 1;
            if x < 0 {
                x = y;
                y = 0;
            }
        }
    }
    Ok(vec![of_task[..jobs[0] as usize].to_vec()])
}

fn from_file(path: &Path, jobs: &[u32], nodes: u32) -> Result<Vec<Vec<u32>>, PlacementError> {
    let file = path.display().to_string();
    let err = |line: usize, what: String| PlacementError::File {
        file: file.clone(),
        line,
        what,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(0, e.to_string()))?;
    let mut at: Vec<Vec<Option<u32>>> = jobs.iter().map(|&n| vec![None; n as usize]).collect();
    let mut used = vec![false; nodes as usize];
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let body = raw.split('#').next().unwrap_or("");
        // INSEE's separators: , . : _ - > space tab.
        let f: Vec<&str> = body
            .split(|c: char| ",.:_->".contains(c) || c.is_whitespace())
            .filter(|s| !s.is_empty())
            .collect();
        if f.is_empty() {
            continue;
        }
        if f.len() != 3 {
            return Err(err(
                line,
                format!("expected `node task instance`, found {} fields", f.len()),
            ));
        }
        let num = |k: usize, name: &str| -> Result<u32, PlacementError> {
            f[k].parse()
                .map_err(|_| err(line, format!("{name} `{}` is not a number", f[k])))
        };
        let (node, task, inst) = (num(0, "node")?, num(1, "task")?, num(2, "instance")?);
        if node >= nodes {
            return Err(err(
                line,
                format!("node {node} is beyond the network's {nodes} nodes"),
            ));
        }
        let Some(slot) = at
            .get_mut(inst as usize)
            .and_then(|j| j.get_mut(task as usize))
        else {
            return Err(err(
                line,
                format!("task {task} of instance {inst} does not exist"),
            ));
        };
        if slot.is_some() {
            return Err(err(
                line,
                format!("task {task} of instance {inst} is placed twice"),
            ));
        }
        if std::mem::replace(&mut used[node as usize], true) {
            return Err(err(line, format!("node {node} already holds a task")));
        }
        *slot = Some(node);
    }
    at.into_iter()
        .enumerate()
        .map(|(j, tasks)| {
            tasks
                .into_iter()
                .enumerate()
                .map(|(t, n)| {
                    n.ok_or_else(|| err(0, format!("task {t} of instance {j} has no node")))
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(kind: PlacementKind) -> Placement {
        Placement {
            kind,
            ..Placement::default()
        }
    }

    fn distinct(v: &[Vec<u32>]) -> bool {
        let mut all: Vec<u32> = v.iter().flatten().copied().collect();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        all.len() == n
    }

    #[test]
    fn formulas_on_a_4x4_torus() {
        let d = [4, 4];
        let c = place(&p(PlacementKind::Consecutive), &[3, 2], &d, 1).unwrap();
        assert_eq!(c, [vec![0, 1, 2], vec![3, 4]]);
        // Column: tasks go down the columns of the 4x4 grid (node = x + 4y).
        let c = place(&p(PlacementKind::Column), &[6], &d, 1).unwrap();
        assert_eq!(c, [vec![0, 4, 8, 12, 1, 5]]);
        let mut s = p(PlacementKind::Shift);
        s.shift = 14;
        assert_eq!(place(&s, &[3], &d, 1).unwrap(), [vec![14, 15, 0]]);
        // Column on a 4x2 grid (rows = 2): x = t / 2, y = t mod 2.
        let c = place(&p(PlacementKind::Column), &[8], &[4, 2], 1).unwrap();
        assert_eq!(c, [vec![0, 4, 1, 5, 2, 6, 3, 7]]);
    }

    #[test]
    fn quadrants_hold_one_instance_each() {
        // 4x4: quadrant j covers x in [2*(j&1), +2), y in [2*(j>>1), +2).
        let q = place(&p(PlacementKind::Quadrant), &[4, 4, 4, 4], &[4, 4], 1).unwrap();
        assert_eq!(
            q,
            [
                vec![0, 1, 4, 5],
                vec![2, 3, 6, 7],
                vec![8, 9, 12, 13],
                vec![10, 11, 14, 15]
            ]
        );
        let e = place(&p(PlacementKind::Quadrant), &[5], &[4, 4], 1).unwrap_err();
        assert!(
            e.to_string().contains("5 tasks do not fit a quadrant of 4"),
            "{e}"
        );
    }

    #[test]
    fn diagonal_walks_anti_diagonals() {
        // 3x3: nodes 0.. are given to grid positions (x, y) = (0,0), (1,0),
        // (0,1), (2,0), (1,1), (0,2), (2,1), (1,2), (2,2): each
        // anti-diagonal x + y = k from its largest x down.
        let d = place(&p(PlacementKind::Diagonal), &[9], &[3, 3], 1).unwrap();
        let mut want = [0u32; 9];
        for (node, (x, y)) in [
            (0, 0),
            (1, 0),
            (0, 1),
            (2, 0),
            (1, 1),
            (0, 2),
            (2, 1),
            (1, 2),
            (2, 2),
        ]
        .iter()
        .enumerate()
        {
            want[x + 3 * y] = node as u32;
        }
        assert_eq!(d[0], want);
    }

    #[test]
    fn random_is_a_seeded_injection() {
        let a = place(&p(PlacementKind::Random), &[10, 10], &[8, 8], 5).unwrap();
        assert!(distinct(&a));
        assert_eq!(
            a,
            place(&p(PlacementKind::Random), &[10, 10], &[8, 8], 5).unwrap()
        );
        assert_ne!(
            a,
            place(&p(PlacementKind::Random), &[10, 10], &[8, 8], 6).unwrap()
        );
        let e = place(&p(PlacementKind::Random), &[60, 5], &[8, 8], 5).unwrap_err();
        assert_eq!(
            e,
            PlacementError::TooMany {
                tasks: 65,
                nodes: 64
            }
        );
    }

    #[test]
    fn file_placement_and_its_errors() {
        let dir = std::env::temp_dir().join(format!("fsin-place-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("p.txt");
        let mut s = p(PlacementKind::File);
        s.file = Some(f.clone());
        std::fs::write(&f, "# node task inst\n5 0 0\n7->1:0\n2,0,1\n").unwrap();
        assert_eq!(
            place(&s, &[2, 1], &[4, 4], 1).unwrap(),
            [vec![5, 7], vec![2]]
        );
        for (text, want) in [
            ("5 0 0\n5 1 0\n2 0 1\n", ":2: node 5 already holds a task"),
            ("5 0 0\n", ":0: task 1 of instance 0 has no node"),
            ("16 0 0\n", ":1: node 16 is beyond"),
            ("1 0 3\n", ":1: task 0 of instance 3 does not exist"),
            ("1 x 0\n", ":1: task `x` is not a number"),
        ] {
            std::fs::write(&f, text).unwrap();
            let e = place(&s, &[2, 1], &[4, 4], 1).unwrap_err().to_string();
            assert!(e.contains(want), "{e} (wanted {want})");
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}
