//! A run's journal as an ordinary cassette file, which replays the run offline.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use tackle_core::replay::{Cassette, CassetteConfig, Interaction, InteractionKind};

use super::attempt::load;
use super::error::DurableError;
use super::journal::{replay, Unwritable};
use super::store::RunStore;
use super::DurableRun;

impl DurableRun {
    /// Writes the run's calls so far (the journal's outcomes, then this attempt's) as
    /// a cassette file at `path`, which replays the run offline.
    pub fn export(&self, path: &Path) -> Result<(), DurableError> {
        self.cassette.export_with(path, expand)?;
        let tools = self.attempt.record().tools.clone();
        with_fingerprints(path, &tools)
    }

    /// Writes the journal of the run `run_id` (its completed and resolved calls, in
    /// order) as a cassette file at `path`, from any process and without holding the
    /// run: what an operator exports. The cassette's `tools` holds the schema
    /// fingerprint of each tool called, as the run noted it before the tool's first
    /// call, so `cargo tackle cassette verify` accepts the file and its replay reports
    /// a tool whose schema changed since.
    pub fn export_journal(
        store: &dyn RunStore,
        run_id: &str,
        path: &Path,
    ) -> Result<(), DurableError> {
        let record = load(store, run_id)?;
        let replayed = replay(store.journal(run_id)?);
        let cassette = Cassette::journaled(
            run_id.to_owned(),
            replayed.recorded,
            replayed.next_call,
            Arc::new(Unwritable),
            CassetteConfig::new().with_env_overrides(false),
        );
        cassette.export_with(path, expand)?;
        with_fingerprints(path, &record.tools)
    }
}

/// Adds to the exported cassette at `path` the fingerprint the run noted of each tool
/// it calls and whose fingerprint it lacks (a cassette made from a journal knows only
/// the fingerprints of the calls its attempt made). Rewritten only when one is added.
fn with_fingerprints(path: &Path, noted: &BTreeMap<String, String>) -> Result<(), DurableError> {
    let mut file = tackle_core::replay::load(path)?;
    let mut added = false;
    for interaction in &file.interactions {
        if interaction.kind != InteractionKind::Tool || file.tools.contains_key(&interaction.key) {
            continue;
        }
        if let Some(fingerprint) = noted.get(&interaction.key) {
            file.tools
                .insert(interaction.key.clone(), fingerprint.clone());
            added = true;
        }
    }
    if added {
        tackle_core::replay::file::save(path, &file)?;
    }
    Ok(())
}

/// The journal's model requests made whole again, for a cassette file.
fn expand(interactions: &mut [Interaction]) {
    crate::model::expand_requests(
        interactions
            .iter_mut()
            .filter(|i| i.kind == InteractionKind::Operation)
            .map(|i| &mut i.input),
    );
}
