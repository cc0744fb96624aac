//! What happens when a new tool meets the names already taken.
//!
//! Two rules apply, in this order:
//!
//! 1. **Same key.** The registry's [`CollisionStrategy`] decides: refuse (the default),
//!    move the newcomer under a prefixed namespace, or keep the more trusted tool.
//! 2. **Gated names.** A tool registered at run time may not change what an existing
//!    key or `namespace.name` resolves to when that is a *gated* tool (one that
//!    requires permissions), unless the newcomer requires every one of those
//!    permissions too, or its registration opts in
//!    ([`DynamicTool::with_gated_takeover`](super::DynamicTool::with_gated_takeover)).
//!    Without this rule, registering `adm.wipe@2` with no permissions next to a gated
//!    `adm.wipe@1` would hand every caller of `adm.wipe` the ungated tool.

use std::cmp::Ordering;

use super::tool::Tool;
use super::Registry;
use crate::error::RegistryError;
use crate::version::compare_versions;

/// What to do when a tool's key is already taken. See the [module docs](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CollisionStrategy {
    /// Refuse, naming both definitions.
    #[default]
    Error,
    /// Move the later tool under `<crate or source>.<namespace>`.
    AutoPrefix,
    /// Keep the more trusted tool; a tie is an error.
    Priority,
}

/// A collision the registry resolved, kept so that nothing happens silently.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollisionNote {
    /// The contested key.
    pub key: String,
    /// What was done, in words.
    pub resolution: String,
}

/// Where a checked tool goes.
pub(super) enum Placement {
    /// A new entry.
    Add,
    /// In place of the tool at this index (the newcomer is more trusted).
    Replace(usize),
    /// Nowhere: the tool already registered under this key stays.
    Keep(String),
}

/// Applies the collision strategy to `tool` (moving it, under `auto-prefix`) and
/// says where it goes. Notes every collision it resolves.
pub(super) fn place(registry: &mut Registry, tool: &mut Tool) -> Result<Placement, RegistryError> {
    let Some(&existing) = registry.by_key.get(&tool.key) else {
        return Ok(Placement::Add);
    };
    let first = &registry.tools[existing];
    match registry.strategy {
        CollisionStrategy::Error => Err(duplicate(first, tool)),
        CollisionStrategy::AutoPrefix => {
            let old_key = tool.key.clone();
            let prefix: String = tool
                .origin
                .source_name()
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            let base = format!("{prefix}.{}", tool.meta.namespace);
            let mut namespace = base.clone();
            let mut n = 2;
            while registry.by_key.contains_key(&format!(
                "{namespace}.{}@{}",
                tool.meta.name, tool.meta.version
            )) {
                namespace = format!("{base}_{n}");
                n += 1;
            }
            tool.move_to(namespace);
            registry.collisions.push(CollisionNote {
                resolution: format!("{} was registered as `{}`", tool.origin, tool.key),
                key: old_key,
            });
            Ok(Placement::Add)
        }
        CollisionStrategy::Priority => {
            let (kept, dropped) = match tool.meta.trust.cmp(&first.meta.trust) {
                Ordering::Equal => return Err(duplicate(first, tool)),
                Ordering::Greater => (&*tool, first.as_ref()),
                Ordering::Less => (first.as_ref(), &*tool),
            };
            let note = CollisionNote {
                key: tool.key.clone(),
                resolution: format!(
                    "kept {} ({}) over {} ({})",
                    kept.origin,
                    kept.meta.trust.as_str(),
                    dropped.origin,
                    dropped.meta.trust.as_str()
                ),
            };
            let placement = if tool.meta.trust > first.meta.trust {
                Placement::Replace(existing)
            } else {
                Placement::Keep(first.key.clone())
            };
            registry.collisions.push(note);
            Ok(placement)
        }
    }
}

/// Refuses a placement that would change what a gated tool's key or `namespace.name`
/// resolves to, unless the newcomer requires all of its permissions. See the
/// [module docs](self).
pub(super) fn check_gated_takeover(
    registry: &Registry,
    tool: &Tool,
    placement: &Placement,
) -> Result<(), RegistryError> {
    // The tool its key would stop resolving to.
    if let Placement::Replace(index) = placement {
        refuse_if_weaker(tool, &registry.tools[*index], &tool.key)?;
    }
    // The tool its `namespace.name` resolves to now, when the newcomer is higher.
    if matches!(placement, Placement::Keep(_)) {
        return Ok(());
    }
    let highest = registry
        .by_path
        .get(&tool.path)
        .and_then(|versions| versions.first())
        .map(|&i| &registry.tools[i]);
    if let Some(current) = highest {
        if compare_versions(&tool.meta.version, &current.meta.version) == Ordering::Greater {
            refuse_if_weaker(tool, current, &tool.path)?;
        }
    }
    Ok(())
}

fn refuse_if_weaker(tool: &Tool, displaced: &Tool, name: &str) -> Result<(), RegistryError> {
    let theirs = &displaced.spec().permissions;
    let ours = &tool.spec().permissions;
    let missing: Vec<String> = theirs
        .iter()
        .filter(|p| !ours.contains(p))
        .cloned()
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(RegistryError::GatedTakeover {
        key: tool.key.clone(),
        name: name.to_owned(),
        displaced: displaced.key.clone(),
        missing,
    })
}

fn duplicate(first: &Tool, second: &Tool) -> RegistryError {
    RegistryError::DuplicateKey {
        key: second.key.clone(),
        first: first.origin.clone(),
        second: second.origin.clone(),
    }
}
