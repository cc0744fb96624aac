//! The enums of a tool's spec whose values are words: side effects, replay policy,
//! execution mode, result shaping, sensitivity, sandbox, model hint and trust, each
//! defined once with `words!` and the rules that tie them together.

use std::fmt;
use std::str::FromStr;

use crate::words::{same, words, UnknownWord, WordSet, Words};

words! {
    /// What calling a tool does to the world outside the process.
    #[derive(PartialOrd, Ord)]
    pub enum SideEffects ("side effects") {
        /// A pure computation: same input, same output, nothing touched.
        None = "none",
        /// Reads outside state (files, databases, the network) but changes nothing.
        Read = "read",
        /// Changes state this system owns (files, rows, caches).
        Write = "write",
        /// Acts on a system outside this one (sends mail, pays, calls a model).
        External = "external",
    }
    // Graphorin's side-effect classes (seed 003), read as Stargraph's four (seed 000).
    aliases {
        "pure" => None,
        "read-only" => Read,
        "side-effecting" => Write,
        "external-stateful" => External,
    }
}

impl SideEffects {
    /// Whether the tool changes anything (`write` or `external`).
    pub const fn mutates(self) -> bool {
        matches!(self, SideEffects::Write | SideEffects::External)
    }
}

words! {
    /// What replay does with a tool's calls (see the replay table in the design notes).
    pub enum ReplayPolicy ("replay policy") {
        /// Replay must serve a recorded result; a miss is an error and the tool never runs.
        MustStub = "must-stub",
        /// Replaying this tool is an error before any lookup; it never runs under replay.
        FailLoud = "fail-loud",
        /// Replay serves a recorded result when there is one, else runs the tool.
        RecordedResult = "recorded-result",
    }
}

impl ReplayPolicy {
    /// The policy a tool gets when it does not choose one: the one place this mapping
    /// lives. Pure and read-only tools may run again on a miss (`recorded-result`);
    /// anything that changes the world must be stubbed (`must-stub`).
    pub const fn default_for(side_effects: SideEffects) -> ReplayPolicy {
        if side_effects.mutates() {
            ReplayPolicy::MustStub
        } else {
            ReplayPolicy::RecordedResult
        }
    }

    /// Whether a tool with these side effects may use this policy. `recorded-result`
    /// would re-run a write or external tool on a replay miss, so it is refused there.
    pub const fn allowed_for(self, side_effects: SideEffects) -> bool {
        !(matches!(self, ReplayPolicy::RecordedResult) && side_effects.mutates())
    }
}

words! {
    /// How the executor may schedule a tool relative to other calls of the same batch.
    #[derive(Default)]
    pub enum ExecutionMode ("execution mode") {
        /// Decided by the side effects: `none` and `read` tools run in parallel, `write`
        /// and `external` tools one at a time, in call order.
        #[default]
        Auto = "auto",
        /// Runs alongside other calls whatever its side effects (the tool opts in).
        Parallel = "parallel",
        /// Runs alone: no other call of the batch runs at the same time.
        Sequential = "sequential",
    }
}

words! {
    /// What the door does with a result longer than the tool's `max_result_tokens`.
    ///
    /// Lengths are estimated at four characters a token. Every strategy but
    /// `spill-to-file` leaves a marker saying how much was left out.
    #[derive(Default)]
    pub enum ResultShaping ("result shaping") {
        /// Keeps the beginning and the end and drops the middle.
        #[default]
        Middle = "middle",
        /// Keeps the beginning and drops the tail.
        Tail = "tail",
        /// Writes the whole result to a file (mode 0600) in a per-run directory; the
        /// result becomes a handle to it with a short preview.
        SpillToFile = "spill-to-file",
        /// Asks the runtime's summarizer hook for a summary within the limit.
        Summarize = "summarize",
    }
}

/// The longest result, in estimated tokens, before the door shapes it, for a tool that
/// does not set `max_result_tokens`: 16384. A tool that sets `0` is never shaped.
pub const DEFAULT_MAX_RESULT_TOKENS: u32 = 16384;

impl ResultShaping {
    /// The strategy of a tool that does not choose one, by the tool's name: `tail` for
    /// `code_execution` (the start of a program's output says most), `summarize` for
    /// `web_search`, `middle` for every other tool.
    pub const fn default_for_tool(name: &str) -> ResultShaping {
        if same(name, "code_execution") {
            ResultShaping::Tail
        } else if same(name, "web_search") {
            ResultShaping::Summarize
        } else {
            ResultShaping::Middle
        }
    }
}

words! {
    /// How sensitive a tool's results are. Spilled results carry it to the spill
    /// writer, and the door's span records it; `secret` results are never spilled.
    #[derive(Default, PartialOrd, Ord)]
    pub enum Sensitivity ("sensitivity") {
        /// Anyone may see it.
        Public = "public",
        /// For the operator's own people and systems.
        #[default]
        Internal = "internal",
        /// For those who need it.
        Confidential = "confidential",
        /// Never written outside the process.
        Secret = "secret",
    }
}

words! {
    /// Where a tool runs: in the program's process, or in a child process of its own
    /// that the door can limit and kill (see the runtime's `sandbox` module).
    #[derive(Default)]
    pub enum SandboxKind ("sandbox") {
        /// In the program's process, like any function (the default).
        #[default]
        InProcess = "in-process",
        /// In a child process of the same program, with a cleared environment, CPU-time
        /// and memory limits, no network where the platform allows it, and a hard kill
        /// on timeout or cancellation.
        Process = "process",
    }
}

words! {
    /// A cost tier a tool may prefer its model from: cheaper and quicker, to smarter.
    pub enum ModelHint ("model hint") {
        /// The quickest, cheapest model.
        Fast = "fast",
        /// The middle ground.
        Balanced = "balanced",
        /// The most capable model.
        Smart = "smart",
    }
}

words! {
    /// Where a tool comes from, in increasing order of trust. Used by the `priority`
    /// collision strategy and by result sanitization.
    #[derive(Default, PartialOrd, Ord)]
    pub enum Trust ("trust") {
        /// Imported from an MCP server.
        Mcp = "mcp",
        /// Third-party code or data that is not vetted.
        Untrusted = "untrusted",
        /// Third-party code the operator vouches for.
        Trusted = "trusted",
        /// Written in this program.
        #[default]
        FirstParty = "first-party",
    }
    aliases {
        "trusted-skill" => Trusted,
        "untrusted-skill" => Untrusted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_reads_graphorins_words() {
        assert_eq!(Trust::parse("trusted-skill"), Some(Trust::Trusted));
        assert_eq!(Trust::parse("untrusted-skill"), Some(Trust::Untrusted));
        assert_eq!(Trust::Trusted.as_str(), "trusted");
        assert!(Trust::FirstParty > Trust::Trusted && Trust::Untrusted > Trust::Mcp);
    }

    #[test]
    fn words_round_trip_every_way() {
        for value in ReplayPolicy::ALL {
            assert_eq!(ReplayPolicy::parse(value.as_str()), Some(*value));
            assert_eq!(
                ReplayPolicy::from_attribute(&value.attribute_spelling()),
                Some(*value)
            );
            let json = serde_json::to_value(value).unwrap();
            assert_eq!(json, value.as_str());
            assert_eq!(
                serde_json::from_value::<ReplayPolicy>(json).unwrap(),
                *value
            );
        }
        assert_eq!(
            ResultShaping::SpillToFile.attribute_spelling(),
            "spill_to_file"
        );
        assert_eq!(
            Trust::from_attribute("first_party"),
            Some(Trust::FirstParty)
        );
        assert_eq!(SideEffects::WORDS, ["none", "read", "write", "external"]);
    }

    #[test]
    fn graphorin_side_effect_classes_are_aliases() {
        for (alias, value) in [
            ("pure", SideEffects::None),
            ("read-only", SideEffects::Read),
            ("side-effecting", SideEffects::Write),
            ("external-stateful", SideEffects::External),
        ] {
            assert_eq!(alias.parse::<SideEffects>().unwrap(), value);
            let json = serde_json::json!(alias);
            assert_eq!(serde_json::from_value::<SideEffects>(json).unwrap(), value);
            assert_eq!(
                SideEffects::from_attribute(&alias.replace('-', "_")),
                Some(value)
            );
            // Written as seed 000's word.
            assert_eq!(serde_json::to_value(value).unwrap(), value.as_str());
        }
    }

    #[test]
    fn words_are_usable_at_compile_time() {
        const WRITE: SideEffects = SideEffects::expect("write");
        assert_eq!(WRITE, SideEffects::Write);
        assert_eq!(SideEffects::parse("writes"), None);
    }

    #[test]
    fn unknown_words_name_the_known_ones() {
        let err = "stub".parse::<ReplayPolicy>().unwrap_err().to_string();
        assert_eq!(
            err,
            "unknown replay policy `stub`; expected one of: must-stub, fail-loud, recorded-result"
        );
        let err = serde_json::from_value::<SideEffects>(serde_json::json!("writes"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown variant `writes`"), "{err}");
    }

    #[test]
    fn policy_follows_side_effects() {
        assert_eq!(
            ReplayPolicy::default_for(SideEffects::Read),
            ReplayPolicy::RecordedResult
        );
        assert_eq!(
            ReplayPolicy::default_for(SideEffects::External),
            ReplayPolicy::MustStub
        );
        assert!(!ReplayPolicy::RecordedResult.allowed_for(SideEffects::Write));
        assert!(ReplayPolicy::FailLoud.allowed_for(SideEffects::Write));
    }

    #[test]
    fn a_word_set_reads_spellings_and_aliases() {
        assert_eq!(SideEffects::SET.from_attribute("read_only"), Some("read"));
        assert_eq!(
            ReplayPolicy::SET.from_attribute("must_stub"),
            Some("must-stub")
        );
        assert_eq!(ReplayPolicy::SET.from_attribute("stub"), None);
        assert_eq!(
            ResultShaping::SET.attribute_spellings(),
            ["middle", "tail", "spill_to_file", "summarize"]
        );
    }
}
