//! Version ordering for resolving `namespace.name` to its highest version.
//!
//! Tool versions are short strings such as `1`, `2.1` or `1.4.0-rc.1`. They are
//! compared the semver way, but leniently: dot-separated parts compare numerically
//! when both are numbers (so `1.10` is above `1.9`), missing parts count as zero, a
//! pre-release (`-rc.1`) sorts below its release, and build metadata (`+...`) is
//! ignored except as a final tie-break so the order stays total and deterministic.

use std::cmp::Ordering;

/// Compares two version strings as described in the [module docs](self).
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    let (a_main, a_build) = a.split_once('+').unwrap_or((a, ""));
    let (b_main, b_build) = b.split_once('+').unwrap_or((b, ""));
    let (a_core, a_pre) = split_pre(a_main);
    let (b_core, b_pre) = split_pre(b_main);
    compare_dotted(a_core, b_core, true)
        .then_with(|| match (a_pre, b_pre) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some(x), Some(y)) => compare_dotted(x, y, false),
        })
        .then_with(|| a_build.cmp(b_build))
        .then_with(|| a.cmp(b))
}

fn split_pre(v: &str) -> (&str, Option<&str>) {
    match v.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (v, None),
    }
}

/// Compares dot-separated identifiers. With `pad_zero`, a missing part counts as `0`
/// (release cores); without, the shorter list is lower (pre-release tags).
fn compare_dotted(a: &str, b: &str, pad_zero: bool) -> Ordering {
    let mut xs = a.split('.');
    let mut ys = b.split('.');
    loop {
        let (x, y) = match (xs.next(), ys.next()) {
            (None, None) => return Ordering::Equal,
            (Some(x), None) if pad_zero => (x, "0"),
            (None, Some(y)) if pad_zero => ("0", y),
            (Some(_), None) => return Ordering::Greater,
            (None, Some(_)) => return Ordering::Less,
            (Some(x), Some(y)) => (x, y),
        };
        let ord = match (x.parse::<u64>(), y.parse::<u64>()) {
            (Ok(n), Ok(m)) => n.cmp(&m),
            (Ok(_), Err(_)) => Ordering::Less,
            (Err(_), Ok(_)) => Ordering::Greater,
            (Err(_), Err(_)) => x.cmp(y),
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semver_aware_order() {
        let mut v = vec![
            "1.10",
            "2",
            "1.9",
            "1",
            "1.0.1",
            "2.0.0-rc.1",
            "2.0.0-alpha",
            "10",
            "1.9.0",
        ];
        v.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(
            v,
            [
                "1",
                "1.0.1",
                "1.9",
                "1.9.0",
                "1.10",
                "2.0.0-alpha",
                "2.0.0-rc.1",
                "2",
                "10"
            ]
        );
    }

    #[test]
    fn total_and_deterministic() {
        assert_eq!(compare_versions("1", "1"), Ordering::Equal);
        assert_ne!(compare_versions("1", "1.0"), Ordering::Equal);
        assert_eq!(compare_versions("1+b", "1+a"), Ordering::Greater);
        assert_eq!(
            compare_versions("v2", "1"),
            Ordering::Greater,
            "words sort above numbers"
        );
    }
}
