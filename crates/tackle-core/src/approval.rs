//! Approval: a person (or a policy) says yes or no before a call runs.
//!
//! A tool needs approval when its spec sets `needs_approval` (every call) or when its
//! approval predicate (`#[tool(needs_approval = predicate)]`, or
//! [`DynamicTool::with_approval_when`](crate::DynamicTool::with_approval_when))
//! says so for the validated input. The door then asks the runtime's [`Approver`];
//! with no approver configured, the call is denied.
//!
//! Every request carries an [`ApprovalBinding`]: the tool's key, the call's key (the
//! canonical JSON of the validated arguments as scrubbed of secrets, made once per call
//! and shared with replay and the journal: see [`crate::secrets`]) and, when scrubbing
//! took something out, a digest of what it took, so the binding still tells one secret
//! value from another without holding it. An approval is made from a request and stays bound to
//! it, so an approval given for one set of arguments cannot be used for another: the
//! door checks the binding before the tool runs. An approver may ask the runtime to
//! remember an approval; later calls with the *same* key and arguments then run
//! without asking, while any other arguments are asked about again.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use std::hash::Hasher;

use crate::canonical::{canonical_into, Fnv};

/// What an approval is bound to: a tool key and the exact validated arguments (their
/// scrubbed canonical form, and a digest of the secrets scrubbing took out).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ApprovalBinding {
    key: String,
    canonical: String,
    /// FNV-1a of the unscrubbed arguments' canonical form when scrubbing changed them,
    /// else 0.
    taken: u64,
    hash: u64,
}

impl ApprovalBinding {
    /// The binding of a call of `key` with `input`. The door binds a call to its input
    /// as scrubbed of secrets ([`crate::secrets::Scrubber::input`]), as its approver is
    /// shown it; for an input with no secret that is the input itself.
    pub fn new(key: &str, input: &Value) -> ApprovalBinding {
        let mut canonical = String::new();
        canonical_into(input, &mut canonical);
        ApprovalBinding::of_call(key, canonical, None)
    }

    /// The binding of a call of `key` whose scrubbed input's canonical form is
    /// `canonical` (the call's key, made once by the door) and whose input before
    /// scrubbing was `unscrubbed`, when scrubbing changed it: only a digest of that is
    /// kept.
    pub fn of_call(key: &str, canonical: String, unscrubbed: Option<&Value>) -> ApprovalBinding {
        let taken = unscrubbed.map_or(0, |input| {
            let mut hasher = Fnv::default();
            hasher.write(crate::canonical::canonical(input).as_bytes());
            hasher.finish()
        });
        let mut hasher = Fnv::default();
        hasher.write(key.as_bytes());
        hasher.write(b"\n");
        hasher.write(canonical.as_bytes());
        hasher.write(&taken.to_le_bytes());
        ApprovalBinding {
            key: key.to_owned(),
            hash: hasher.finish(),
            canonical,
            taken,
        }
    }

    /// The tool's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The arguments the binding holds: the call's key, the canonical JSON of its
    /// validated input as scrubbed of secrets (what its approver was shown).
    pub fn arguments(&self) -> &str {
        &self.canonical
    }

    /// A 64-bit hash of the key and arguments, for logs and audit events. Bindings are
    /// compared in full, not by this hash.
    pub fn hash(&self) -> u64 {
        self.hash
    }
}

impl fmt::Debug for ApprovalBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApprovalBinding({} {:016x})", self.key, self.hash)
    }
}

impl fmt::Display for ApprovalBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.hash)
    }
}

/// A call waiting for approval.
#[derive(Clone, Debug)]
pub struct ApprovalRequest {
    /// The tool's key.
    pub key: String,
    /// The call's id (as in audit events).
    pub call_id: u64,
    /// The validated arguments as scrubbed of secrets: a secret argument's value, a
    /// value of the caller's secrets, a token-shaped string is `[REDACTED]` (the
    /// binding still tells the real values apart).
    pub input: Value,
    /// What an approval of this request is bound to.
    pub binding: ApprovalBinding,
}

impl ApprovalRequest {
    /// Approves this request, for this call only.
    pub fn approve(&self) -> ApprovalDecision {
        ApprovalDecision::Approve(Approval {
            binding: self.binding.clone(),
            remember: false,
        })
    }

    /// Approves this request and every later call with the same key and arguments.
    pub fn approve_and_remember(&self) -> ApprovalDecision {
        ApprovalDecision::Approve(Approval {
            binding: self.binding.clone(),
            remember: true,
        })
    }

    /// Denies this request, with a reason the caller (and the model) will read.
    pub fn deny(&self, reason: impl Into<String>) -> ApprovalDecision {
        ApprovalDecision::Deny(reason.into())
    }
}

/// An approval, bound to the request it was made from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Approval {
    binding: ApprovalBinding,
    remember: bool,
}

impl Approval {
    /// What the approval is bound to.
    pub fn binding(&self) -> &ApprovalBinding {
        &self.binding
    }

    /// Whether the runtime should remember it for identical calls.
    pub fn remember(&self) -> bool {
        self.remember
    }
}

/// An approver's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApprovalDecision {
    /// Run the call (made with [`ApprovalRequest::approve`] or
    /// [`ApprovalRequest::approve_and_remember`]).
    Approve(Approval),
    /// Do not run it, for this reason.
    Deny(String),
}

/// The future an [`Approver`] returns.
pub type ApprovalFuture<'a> = Pin<Box<dyn Future<Output = ApprovalDecision> + Send + 'a>>;

/// Decides whether calls that need approval may run. Asking may take as long as it
/// takes (a person at a terminal, a chat message); the call's timeout starts after.
pub trait Approver: Send + Sync {
    /// Decides on one request.
    fn review<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a>;
}

impl<T: Approver + ?Sized> Approver for std::sync::Arc<T> {
    fn review<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        (**self).review(request)
    }
}

/// An approver made of a synchronous closure, for policies and tests.
pub struct ApproveWith<F>(pub F);

impl<F> Approver for ApproveWith<F>
where
    F: Fn(&ApprovalRequest) -> ApprovalDecision + Send + Sync,
{
    fn review<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        let decision = (self.0)(request);
        Box::pin(std::future::ready(decision))
    }
}

impl<F> fmt::Debug for ApproveWith<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApproveWith(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bindings_follow_key_and_arguments_not_their_spelling() {
        let a = ApprovalBinding::new("t.pay@1", &json!({"to": "bob", "amount": 5}));
        let same = ApprovalBinding::new("t.pay@1", &json!({"amount": 5.0, "to": "bob"}));
        let other_args = ApprovalBinding::new("t.pay@1", &json!({"to": "bob", "amount": 6}));
        let other_tool = ApprovalBinding::new("t.refund@1", &json!({"to": "bob", "amount": 5}));
        assert_eq!(a, same, "key order and number spelling do not matter");
        assert_ne!(a, other_args);
        assert_ne!(a, other_tool);
        assert_eq!(a.to_string().len(), 16);
    }
}
