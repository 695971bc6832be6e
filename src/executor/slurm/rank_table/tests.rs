use super::*;

/// An Atlas 800 node's hccn.conf as `hccn_tool` leaves it (two of its eight devices shown
/// with every key it writes).
const HCCN_A: &str = "\
address_0=192.168.100.101
netmask_0=255.255.255.0
netdetect_0=192.168.100.1
gateway_0=192.168.100.1
send_arp_status_0=1
address_1=192.168.101.101
netmask_1=255.255.255.0
netdetect_1=192.168.101.1
# devices 2..7 omitted
";
const HCCN_B: &str = "address_0=192.168.100.102\naddress_1=192.168.101.102\n";

fn folder(servers: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("servers"), servers).unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

#[test]
fn hccn_conf_gives_each_devices_ip_and_names_a_bad_line() {
    let ips = parse_hccn(HCCN_A, "a.conf").unwrap();
    assert_eq!(ips.len(), 2);
    assert_eq!(ips[&0], "192.168.100.101");
    assert_eq!(ips[&1], "192.168.101.101");
    let err = parse_hccn("netmask_0=255.0.0.0\naddress_x=1.2.3.4\n", "/etc/hccn.conf").unwrap_err();
    assert_eq!(
        err.to_string(),
        "/etc/hccn.conf:2: `address_x=1.2.3.4` is not an `address_<device>=<IP>` line"
    );
    let err = parse_hccn("address_3=not-an-ip\n", "h").unwrap_err();
    assert!(err.to_string().starts_with("h:1: "), "{err}");
}

#[test]
fn two_nodes_of_two_ranks_make_the_documented_json() {
    let dir = folder(
        "n1 10.0.0.1\nn2 10.0.0.2\n",
        &[
            ("n1.conf", HCCN_A),
            ("n2.conf", HCCN_B),
            ("n2.devices", "0,1\n"),
        ],
    );
    let out = dir.path().join("rank_table.json");
    write(dir.path(), 2, false, &out).unwrap();
    let got: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let want = serde_json::json!({
        "status": "completed",
        "version": "1.0",
        "server_count": "2",
        "server_list": [
            {"server_id": "10.0.0.1", "device": [
                {"device_id": "0", "device_ip": "192.168.100.101", "rank_id": "0"},
                {"device_id": "1", "device_ip": "192.168.101.101", "rank_id": "1"}]},
            {"server_id": "10.0.0.2", "device": [
                {"device_id": "0", "device_ip": "192.168.100.102", "rank_id": "2"},
                {"device_id": "1", "device_ip": "192.168.101.102", "rank_id": "3"}]}
        ]
    });
    assert_eq!(got, want);
}

#[test]
fn granted_devices_pick_the_ids_and_their_ips() {
    let dir = folder(
        "a 10.0.0.1\nb\n",
        &[("a.conf", HCCN_A), ("a.devices", "1\n"), ("b.conf", HCCN_B)],
    );
    let table = generate(&read_servers(dir.path()).unwrap(), 1, false).unwrap();
    let a = &table.server_list[0].device[0];
    assert_eq!(
        (a.device_id.as_str(), a.device_ip.as_str()),
        ("1", "192.168.101.101")
    );
    // A node line without an address: the node name is its server id.
    assert_eq!(table.server_list[1].server_id, "b");
    assert_eq!(table.server_list[1].device[0].rank_id, "1");
}

#[test]
fn what_hccl_cannot_use_is_refused_with_the_node_and_file() {
    let dir = folder("n1 10.0.0.1\nn2 10.0.0.2\n", &[("n1.conf", HCCN_A)]);
    let err = read_servers(dir.path()).unwrap_err();
    assert!(
        matches!(&err, RankTableError::NoHccn { node, .. } if node == "n2"),
        "{err}"
    );
    let dir = folder("n1 10.0.0.1\n", &[("n1.conf", HCCN_B)]);
    let err = generate(&read_servers(dir.path()).unwrap(), 4, false).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "node n1: {} has no address_2= line (the IP of device 2)",
            dir.path().join("n1.conf").display()
        )
    );
    let dir = folder(
        "n1 10.0.0.1\n",
        &[("n1.conf", HCCN_A), ("n1.devices", "0\n")],
    );
    let err = generate(&read_servers(dir.path()).unwrap(), 2, false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "node n1 was granted 1 device(s) (`0`), the case runs 2 rank(s) per node"
    );
    let dir = folder("n1 a\nn2 b\n", &[("n1.conf", HCCN_A), ("n2.conf", HCCN_B)]);
    assert_eq!(
        generate(&read_servers(dir.path()).unwrap(), 2, true),
        Err(RankTableError::Spread)
    );
    let dir = folder("../x 1.2.3.4\n", &[]);
    assert!(matches!(
        read_servers(dir.path()),
        Err(RankTableError::ServerLine { line: 1, .. })
    ));
    let dir = folder("\n", &[]);
    assert!(matches!(
        read_servers(dir.path()),
        Err(RankTableError::NoServers(_))
    ));
}

#[test]
fn the_helper_entry_writes_the_table_or_the_reason_beside_it() {
    let dir = folder("n1 10.0.0.1\n", &[("n1.conf", HCCN_A)]);
    let out = dir.path().join("rank_table.json");
    let args = |k: &str| -> Vec<std::ffi::OsString> {
        vec![
            "campaign".into(),
            ARG.into(),
            dir.path().into(),
            k.into(),
            "pack".into(),
            out.clone().into(),
        ]
    };
    assert_eq!(helper_main(&args("2")), Some(0));
    assert!(out.is_file());
    assert!(!dir.path().join("rank_table.json.error").exists());
    assert_eq!(helper_main(&args("3")), Some(1));
    let why = std::fs::read_to_string(dir.path().join("rank_table.json.error")).unwrap();
    assert!(why.contains("no address_2= line"), "{why}");
    assert_eq!(helper_main(&args("0")), Some(2));
    assert_eq!(helper_main(&["campaign".into(), "run".into()]), None);
}
