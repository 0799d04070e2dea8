//! Addresses against the kernel, on a TAP in a private network namespace.

use std::net::{IpAddr, Ipv6Addr};

use super::*;
use crate::hostif::tap::Tap;
use crate::hostif::testns::{in_private_netns, ip_json, set_sysctl};

const MAC: [u8; 6] = [0x02, 0x00, 0x5e, 0x10, 0x00, 0x01];

fn a(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// The link-local the kernel derives from [`MAC`] (EUI-64).
fn kernels_link_local() -> (IpAddr, u8) {
    (a("fe80::5eff:fe10:1"), 64)
}

/// The addresses of `ifindex`, sorted, for comparisons.
fn sorted(rtnl: &mut Rtnl, ifindex: u32) -> Vec<(IpAddr, u8)> {
    let mut have = rtnl.addresses(ifindex).unwrap();
    have.sort();
    have
}

fn set_of(mut addrs: Vec<(IpAddr, u8)>) -> Vec<(IpAddr, u8)> {
    addrs.sort();
    addrs
}

#[test]
fn add_and_del_are_idempotent_for_v4_and_v6() {
    in_private_netns("add-del", || {
        let tap = Tap::create("fwdtap0", MAC, 1500).unwrap();
        let mut rtnl = Rtnl::open().unwrap();
        let ifindex = tap.ifindex();
        assert_eq!(rtnl.addresses(ifindex).unwrap(), [kernels_link_local()]);

        let v4 = (a("192.0.2.1"), 24);
        let v6 = (a("2001:db8:1::1"), 64);
        for _ in 0..2 {
            rtnl.add_address(ifindex, v4.0, v4.1).unwrap();
            rtnl.add_address(ifindex, v6.0, v6.1).unwrap();
        }
        assert_eq!(
            sorted(&mut rtnl, ifindex),
            set_of(vec![v4, v6, kernels_link_local()])
        );

        // IPv6 without DAD: usable at once, never tentative.
        if let Some(json) = ip_json(&["-6", "address", "show", "dev", "fwdtap0"]) {
            let info = json[0]["addr_info"].as_array().unwrap();
            let ours = info
                .iter()
                .find(|i| i["local"] == "2001:db8:1::1")
                .expect("listed");
            assert_eq!(ours["nodad"], true, "{ours}");
            assert!(ours.get("tentative").is_none(), "{ours}");
        }

        for _ in 0..2 {
            rtnl.del_address(ifindex, v4.0, v4.1).unwrap();
            rtnl.del_address(ifindex, v6.0, v6.1).unwrap();
        }
        assert_eq!(rtnl.addresses(ifindex).unwrap(), [kernels_link_local()]);
    });
}

#[test]
fn the_kernels_link_local_is_told_from_ours() {
    in_private_netns("link-local", || {
        let tap = Tap::create("fwdtap0", MAC, 1500).unwrap();
        let mut rtnl = Rtnl::open().unwrap();
        rtnl.add_address(tap.ifindex(), a("fe80::1"), 64).unwrap();
        let entries = rtnl.entries(tap.ifindex()).unwrap();
        let kernels = entries
            .iter()
            .find(|e| (e.addr, e.prefix_len) == kernels_link_local())
            .unwrap();
        let ours = entries.iter().find(|e| e.addr == a("fe80::1")).unwrap();
        assert!(kernels.is_kernels_link_local());
        // Kernels before 6.3 record no address protocol: ours looks like
        // the kernel's there.
        if kernels.protocol.is_some() {
            assert_eq!(ours.protocol, Some(AddressProtocol::from(ADDRESS_PROTOCOL)));
            assert!(!ours.is_kernels_link_local());
        } else {
            println!(
                "this kernel records no address protocol (before 6.3): part of the test skipped"
            );
        }
    });
}

#[test]
fn sync_makes_the_set_exact_and_keeps_the_kernels_link_local() {
    in_private_netns("sync", || {
        let tap = Tap::create("fwdtap0", MAC, 1500).unwrap();
        let mut rtnl = Rtnl::open().unwrap();
        let ifindex = tap.ifindex();
        let ll = kernels_link_local();
        let supports_protocol = rtnl.entries(ifindex).unwrap()[0].protocol.is_some();

        let first = vec![
            (a("192.0.2.1"), 24),
            (a("198.51.100.1"), 24),
            (a("2001:db8::1"), 64),
            (a("fe80::1"), 64),
            (a("192.0.2.1"), 24), // duplicates are harmless
        ];
        for _ in 0..2 {
            rtnl.sync_addresses(ifindex, &first).unwrap();
            let mut want = first[..4].to_vec();
            want.push(ll);
            assert_eq!(sorted(&mut rtnl, ifindex), set_of(want));
        }

        // Someone else's address goes too.
        rtnl.socket_add_foreign(ifindex, a("203.0.113.9"), 24);
        let second = vec![(a("198.51.100.1"), 24), (a("2001:db8::2"), 64)];
        rtnl.sync_addresses(ifindex, &second).unwrap();
        let mut want = second.clone();
        want.push(ll);
        if !supports_protocol {
            want.push((a("fe80::1"), 64));
        }
        assert_eq!(sorted(&mut rtnl, ifindex), set_of(want));

        rtnl.sync_addresses(ifindex, &[]).unwrap();
        let mut want = vec![ll];
        if !supports_protocol {
            want.push((a("fe80::1"), 64));
        }
        assert_eq!(sorted(&mut rtnl, ifindex), set_of(want));
    });
}

#[test]
fn sync_survives_a_primary_taking_its_secondaries() {
    in_private_netns("secondaries", || {
        let tap = Tap::create("fwdtap0", MAC, 1500).unwrap();
        // The kernel's default, which Tap::create changes.
        set_sysctl("net/ipv4/conf/fwdtap0/promote_secondaries", "0");
        let mut rtnl = Rtnl::open().unwrap();
        let ifindex = tap.ifindex();
        rtnl.sync_addresses(ifindex, &[(a("10.0.0.1"), 24), (a("10.0.0.2"), 24)])
            .unwrap();
        // Deleting the primary .1 deletes the secondary .2 with it.
        rtnl.sync_addresses(ifindex, &[(a("10.0.0.2"), 24)])
            .unwrap();
        assert_eq!(
            sorted(&mut rtnl, ifindex),
            set_of(vec![(a("10.0.0.2"), 24), kernels_link_local()])
        );
    });
}

#[test]
fn addresses_stay_across_carrier_changes_but_not_a_small_mtu() {
    in_private_netns("addresses-carrier", || {
        let tap = Tap::create("fwdtap0", MAC, 1500).unwrap();
        let mut rtnl = Rtnl::open().unwrap();
        let ifindex = tap.ifindex();
        let want = [(a("192.0.2.1"), 24), (a("2001:db8::1"), 64)];
        rtnl.sync_addresses(ifindex, &want).unwrap();
        let before = sorted(&mut rtnl, ifindex);
        tap.set_carrier(false).unwrap();
        assert_eq!(sorted(&mut rtnl, ifindex), before);
        tap.set_carrier(true).unwrap();
        assert_eq!(sorted(&mut rtnl, ifindex), before);

        // Below 1280 the kernel removes IPv6 from the interface, addresses
        // included; the caller syncs again once the MTU is back.
        tap.set_mtu(1200).unwrap();
        assert_eq!(rtnl.addresses(ifindex).unwrap(), [want[0]]);
        tap.set_mtu(1500).unwrap();
        rtnl.sync_addresses(ifindex, &want).unwrap();
        // The kernel makes its link-local again when IPv6 comes back, in
        // its own time (a full test run under load once listed the
        // interface before it had): ours are compared, the kernel's
        // link-local may or may not be there yet.
        let ours = |v: Vec<(IpAddr, u8)>| -> Vec<(IpAddr, u8)> {
            v.into_iter()
                .filter(|&e| e != kernels_link_local())
                .collect()
        };
        assert_eq!(ours(sorted(&mut rtnl, ifindex)), ours(before));
    });
}

#[test]
fn errors_name_the_request() {
    in_private_netns("errors", || {
        let tap = Tap::create("fwdtap0", MAC, 1500).unwrap();
        let mut rtnl = Rtnl::open().unwrap();
        let missing = tap.ifindex() + 100;

        let err = rtnl.add_address(missing, a("192.0.2.1"), 24).unwrap_err();
        assert!(
            matches!(err, RtnlError::NoSuchInterface { ifindex, .. } if ifindex == missing),
            "{err}"
        );
        let err = rtnl.add_address(missing, a("2001:db8::1"), 64).unwrap_err();
        assert!(matches!(err, RtnlError::NoSuchInterface { .. }), "{err}");
        assert!(err.to_string().contains("2001:db8::1/64"), "{err}");
        assert_eq!(rtnl.addresses(missing).unwrap(), []);
        assert_eq!(rtnl.link(missing).unwrap(), None);

        for (addr, prefix_len) in [(a("192.0.2.1"), 33), (a("2001:db8::1"), 129)] {
            let err = rtnl
                .add_address(tap.ifindex(), addr, prefix_len)
                .unwrap_err();
            assert!(matches!(err, RtnlError::BadPrefix { .. }), "{err}");
            let err = rtnl
                .sync_addresses(tap.ifindex(), &[(addr, prefix_len)])
                .unwrap_err();
            assert!(matches!(err, RtnlError::BadPrefix { .. }), "{err}");
        }

        // What the kernel itself refuses comes back with its errno (and
        // its extended ACK text, where it gives one).
        let multicast = IpAddr::V6(Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1));
        let err = rtnl.add_address(tap.ifindex(), multicast, 64).unwrap_err();
        assert!(matches!(err, RtnlError::Kernel { .. }), "{err}");
        println!("the kernel's answer to a multicast address: {err}");

        // Deleting what is not there is not an error.
        rtnl.del_address(tap.ifindex(), a("192.0.2.77"), 24)
            .unwrap();
        rtnl.del_address(tap.ifindex(), a("2001:db8::77"), 64)
            .unwrap();
    });
}

impl Rtnl {
    /// Adds an address as another program would (no protocol, no flags).
    fn socket_add_foreign(&mut self, ifindex: u32, addr: IpAddr, prefix_len: u8) {
        let request = Request::AddAddress {
            ifindex,
            addr,
            prefix_len,
        };
        let msg = address_message(ifindex, addr, prefix_len);
        self.exchange(
            request,
            RouteNetlinkMessage::NewAddress(msg),
            NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
        )
        .unwrap();
    }
}
