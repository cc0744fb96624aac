//! Registry build failures: duplicate keys name both definitions, and examples are
//! validated against the tool's schemas. This binary's tools are broken on purpose,
//! so `Registry::from_inventory` fails here; the tests build subsets to see each error.

use tackle::error::ToolOrigin;
use tackle::registry::{registrations, CollisionStrategy};
use tackle::{error::RegistryError, Registry};

mod first {
    /// One definition.
    #[tackle::tool(namespace = "dup", side_effects = none)]
    pub fn same() -> u8 {
        1
    }
}

mod second {
    /// Another definition with the same key.
    #[tackle::tool(namespace = "dup", side_effects = none, name = "same", trust = untrusted)]
    pub fn also_same() -> u8 {
        2
    }
}

/// Its example breaks its own input schema.
#[tackle::tool(namespace = "bad", side_effects = none, examples = [r#"{"n": "three"}"#])]
fn bad_example(n: u32) -> u32 {
    n
}

/// Its example output breaks its output schema.
#[tackle::tool(namespace = "bad", side_effects = none, examples = [(r#"{"n": 3}"#, r#""three""#)])]
fn bad_output_example(n: u32) -> u32 {
    n
}

fn only(prefix: &str) -> impl Iterator<Item = &'static tackle::registry::ToolRegistration> + '_ {
    registrations().filter(move |r| r.key().starts_with(prefix))
}

#[test]
fn the_whole_inventory_is_refused() {
    assert!(Registry::from_inventory().is_err());
}

#[test]
fn a_duplicate_key_names_both_source_locations() {
    let err = Registry::from_registrations(only("dup."), CollisionStrategy::Error).unwrap_err();
    let RegistryError::DuplicateKey { key, first, second } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(key, "dup.same@1");
    let ToolOrigin::Static {
        file: f1,
        line: l1,
        module: m1,
    } = first
    else {
        panic!("{first:?}")
    };
    let ToolOrigin::Static {
        file: f2,
        line: l2,
        module: m2,
    } = second
    else {
        panic!("{second:?}")
    };
    assert!(f1.ends_with("registry_errors.rs") && f2.ends_with("registry_errors.rs"));
    assert_ne!(l1, l2);
    assert_eq!(
        (*m1, *m2),
        ("registry_errors::first", "registry_errors::second")
    );
    let text = err.to_string();
    assert!(
        text.contains(&format!("registry_errors.rs:{l1}"))
            && text.contains(&format!("registry_errors.rs:{l2}")),
        "{text}"
    );
}

#[test]
fn priority_resolves_by_trust_and_auto_prefix_by_crate() {
    let registry = Registry::from_registrations(only("dup."), CollisionStrategy::Priority).unwrap();
    assert_eq!(registry.len(), 1);
    assert_eq!(
        registry.get("dup.same@1").unwrap().spec().trust,
        tackle::spec::Trust::FirstParty
    );
    assert_eq!(registry.collisions().len(), 1);

    let registry =
        Registry::from_registrations(only("dup."), CollisionStrategy::AutoPrefix).unwrap();
    let keys: Vec<_> = registry.list().map(|t| t.key().to_owned()).collect();
    assert_eq!(keys, ["dup.same@1", "registry_errors.dup.same@1"]);
    // The moved tool's spec (built lazily) agrees with its new key.
    let moved = registry.get("registry_errors.dup.same@1").unwrap();
    assert_eq!(moved.spec().namespace, "registry_errors.dup");
    assert_eq!(moved.spec().key(), moved.key());
}

#[test]
fn examples_are_validated_when_the_registry_is_built() {
    let err = Registry::from_registrations(only("bad.bad_example@"), CollisionStrategy::Error)
        .unwrap_err();
    assert!(
        matches!(
            &err,
            RegistryError::InvalidExample {
                which: "input",
                index: 0,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("at /n"), "{err}");
    let err =
        Registry::from_registrations(only("bad.bad_output"), CollisionStrategy::Error).unwrap_err();
    assert!(
        matches!(
            &err,
            RegistryError::InvalidExample {
                which: "output",
                ..
            }
        ),
        "{err:?}"
    );
}
