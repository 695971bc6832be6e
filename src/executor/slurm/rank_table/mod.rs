//! HCCL's rank table for a job, made from its allocation and each node's `/etc/hccn.conf`.
//!
//! A communicator can be formed from a rank table (`HcclCommInitClusterInfo(file, rank, &comm)`)
//! instead of root info: JSON `{"status": "completed", "version": "1.0", "server_count": "N",
//! "server_list": [{"server_id": ADDR, "device": [{"device_id", "device_ip", "rank_id"}, …]}]}`
//! (values as strings, as CANN writes them), one server per node in the allocation's order,
//! each with its ranks' devices, `device_ip` from that node's `hccn.conf` (`address_<dev>=IP`).
//! Only the running job knows its nodes and their files, so the batch script gathers them into
//! `<bundle>/hccn/` (`servers`: `NODE ADDR` lines; `<node>.conf`; `<node>.devices`: the
//! devices Slurm granted there) and runs `campaign __rank-table`, which this module is: it
//! reads that folder, writes `rank_table.json` into the bundle (or, when it cannot,
//! `rank_table.json.error` with the reason, for the helper to report) and never runs anything.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// The hidden first argument: `campaign __rank-table HCCN_DIR RANKS_PER_NODE PLACEMENT OUT`.
pub const ARG: &str = "__rank-table";

/// Why no rank table could be made; each names the node, file and line it comes from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RankTableError {
    #[error("{file}:{line}: `{text}` is not an `address_<device>=<IP>` line")]
    HccnLine {
        file: String,
        line: usize,
        text: String,
    },
    #[error(
        "node {node} has no hccn.conf ({file}): HCCL's rank table needs each device's IP from it"
    )]
    NoHccn { node: String, file: String },
    #[error("node {node}: {file} has no address_{device}= line (the IP of device {device})")]
    NoAddress {
        node: String,
        device: u32,
        file: String,
    },
    #[error("node {node} was granted {granted} device(s) (`{list}`), the case runs {want} rank(s) per node")]
    TooFewDevices {
        node: String,
        granted: usize,
        list: String,
        want: u32,
    },
    #[error("{file}:{line}: `{text}` is not a `NODE ADDRESS` line")]
    ServerLine {
        file: String,
        line: usize,
        text: String,
    },
    #[error("{0}: the allocation names no node")]
    NoServers(String),
    #[error("placement `spread` puts one node's ranks apart; HCCL's rank table needs each server's ranks contiguous (use placement `pack`, or root info)")]
    Spread,
    #[error("{path}: {reason}")]
    Io { path: String, reason: String },
}

/// One node of the allocation, with what the rank table needs of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// The node's name in the batch system.
    pub node: String,
    /// Its address (`scontrol show node`'s `NodeAddr`): the rank table's `server_id`.
    pub addr: String,
    /// `address_<device>` → IP, from its hccn.conf.
    pub device_ips: BTreeMap<u32, String>,
    /// The devices Slurm granted on it (empty: the first `ranks_per_node` ids, 0, 1, …).
    pub granted: Vec<u32>,
    /// Where its hccn.conf copy was read (for messages).
    pub hccn_file: String,
}

#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct RankTable {
    pub status: String,
    pub version: String,
    pub server_count: String,
    pub server_list: Vec<ServerEntry>,
}

#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct ServerEntry {
    pub server_id: String,
    pub device: Vec<DeviceEntry>,
}

#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct DeviceEntry {
    pub device_id: String,
    pub device_ip: String,
    pub rank_id: String,
}

/// `address_<N>=<IP>` lines of an hccn.conf (other keys — `netmask_0`, `netdetect_0`,
/// `gateway_0` — and `#` comments are skipped); `file` names it in errors.
pub fn parse_hccn(text: &str, file: &str) -> Result<BTreeMap<u32, String>, RankTableError> {
    let mut out = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let Some(rest) = line.strip_prefix("address_") else {
            continue;
        };
        let bad = || RankTableError::HccnLine {
            file: file.to_string(),
            line: i + 1,
            text: line.to_string(),
        };
        let (device, ip) = rest.split_once('=').ok_or_else(bad)?;
        let device: u32 = device.trim().parse().map_err(|_| bad())?;
        let ip = ip.trim();
        ip.parse::<IpAddr>().map_err(|_| bad())?;
        out.insert(device, ip.to_string());
    }
    Ok(out)
}

/// The rank table of `servers` in allocation order with `k` ranks on each, ranks in blocks
/// (node i holds ranks i·k … i·k+k−1, as `srun` numbers them under `--ntasks-per-node`), local
/// rank j on the node's j-th device.
pub fn generate(servers: &[Server], k: u32, spread: bool) -> Result<RankTable, RankTableError> {
    if spread && servers.len() > 1 && k > 1 {
        return Err(RankTableError::Spread);
    }
    let mut server_list = Vec::with_capacity(servers.len());
    for (i, s) in servers.iter().enumerate() {
        let devices: Vec<u32> = if s.granted.is_empty() {
            (0..k).collect()
        } else if s.granted.len() < k as usize {
            return Err(RankTableError::TooFewDevices {
                node: s.node.clone(),
                granted: s.granted.len(),
                list: join(&s.granted),
                want: k,
            });
        } else {
            s.granted[..k as usize].to_vec()
        };
        let mut device = Vec::with_capacity(devices.len());
        for (j, id) in devices.iter().enumerate() {
            let ip = s
                .device_ips
                .get(id)
                .ok_or_else(|| RankTableError::NoAddress {
                    node: s.node.clone(),
                    device: *id,
                    file: s.hccn_file.clone(),
                })?;
            device.push(DeviceEntry {
                device_id: id.to_string(),
                device_ip: ip.clone(),
                rank_id: (i as u64 * u64::from(k) + j as u64).to_string(),
            });
        }
        server_list.push(ServerEntry {
            server_id: s.addr.clone(),
            device,
        });
    }
    Ok(RankTable {
        status: "completed".into(),
        version: "1.0".into(),
        server_count: servers.len().to_string(),
        server_list,
    })
}

fn join(ids: &[u32]) -> String {
    ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// The servers the batch script gathered into `dir`: `servers` in order, each node's
/// `<node>.conf` and `<node>.devices`.
pub fn read_servers(dir: &Path) -> Result<Vec<Server>, RankTableError> {
    let list = dir.join("servers");
    let text = read(&list)?;
    let name = list.display().to_string();
    let mut servers = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        let (Some(node), addr, None) = (words.next(), words.next(), words.next()) else {
            return Err(RankTableError::ServerLine {
                file: name.clone(),
                line: i + 1,
                text: line.to_string(),
            });
        };
        // A node name is a file name here: nothing that could leave the folder.
        if node.contains('/') || node.starts_with('.') {
            return Err(RankTableError::ServerLine {
                file: name.clone(),
                line: i + 1,
                text: line.to_string(),
            });
        }
        let conf = dir.join(format!("{node}.conf"));
        let hccn_file = conf.display().to_string();
        let conf_text = match std::fs::read_to_string(&conf) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(RankTableError::NoHccn {
                    node: node.to_string(),
                    file: hccn_file,
                })
            }
            Err(e) => {
                return Err(RankTableError::Io {
                    path: hccn_file,
                    reason: e.to_string(),
                })
            }
        };
        let device_ips = parse_hccn(&conf_text, &hccn_file)?;
        let granted = std::fs::read_to_string(dir.join(format!("{node}.devices")))
            .ok()
            .and_then(|t| {
                let t = t.trim();
                (!t.is_empty())
                    .then(|| t.split(',').map(|d| d.trim().parse::<u32>().ok()).collect())
                    .flatten()
            })
            .unwrap_or_default();
        servers.push(Server {
            node: node.to_string(),
            addr: addr.unwrap_or(node).to_string(),
            device_ips,
            granted,
            hccn_file,
        });
    }
    if servers.is_empty() {
        return Err(RankTableError::NoServers(name));
    }
    Ok(servers)
}

fn read(path: &Path) -> Result<String, RankTableError> {
    std::fs::read_to_string(path).map_err(|e| RankTableError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

/// Make the rank table from `dir` and write it to `out` (temp file, then rename).
pub fn write(dir: &Path, k: u32, spread: bool, out: &Path) -> Result<(), RankTableError> {
    let table = generate(&read_servers(dir)?, k, spread)?;
    let text = serde_json::to_string_pretty(&table).unwrap_or_default() + "\n";
    let io = |e: std::io::Error| RankTableError::Io {
        path: out.display().to_string(),
        reason: e.to_string(),
    };
    let tmp = PathBuf::from(format!("{}.tmp", out.display()));
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, out).map_err(io)
}

/// `campaign __rank-table HCCN_DIR RANKS_PER_NODE PLACEMENT OUT`: the rank table into OUT, or
/// the reason into `OUT.error` (and on stderr) and exit 1; `None` for any other command line.
pub fn helper_main(args: &[std::ffi::OsString]) -> Option<i32> {
    if args.get(1).and_then(|a| a.to_str()) != Some(ARG) {
        return None;
    }
    let arg = |i: usize| args.get(i).map(PathBuf::from);
    let (Some(dir), Some(k), Some(placement), Some(out)) = (arg(2), arg(3), arg(4), arg(5)) else {
        crate::tell!("usage: campaign {ARG} HCCN_DIR RANKS_PER_NODE PLACEMENT OUT");
        return Some(2);
    };
    let Some(k) = k
        .to_str()
        .and_then(|k| k.parse::<u32>().ok())
        .filter(|k| *k > 0)
    else {
        crate::tell!("campaign {ARG}: RANKS_PER_NODE must be a number above 0");
        return Some(2);
    };
    let error_file = PathBuf::from(format!("{}.error", out.display()));
    let _ = std::fs::remove_file(&error_file);
    match write(&dir, k, placement.to_str() == Some("spread"), &out) {
        Ok(()) => Some(0),
        Err(e) => {
            crate::tell!("campaign: rank table: {e}");
            let _ = std::fs::write(&error_file, format!("{e}\n"));
            Some(1)
        }
    }
}

#[cfg(test)]
mod tests;
