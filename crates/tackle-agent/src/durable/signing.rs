//! Approval decisions that prove themselves: a decision stored for a durable run is
//! signed with an [`ApprovalKey`] (HMAC-SHA256) over the run's id, the request it
//! answers (the tool's key, the canonical arguments, the request's id) and the
//! decision itself, so one edited in the store (other arguments, another request,
//! another run's decision copied over, an approval where a rejection was) no longer
//! verifies.
//!
//! A run opened with [`DurableOptions::with_approval_key`](super::DurableOptions::with_approval_key)
//! takes only decisions that verify with that key: a decision that does not (unsigned,
//! signed by another key, edited) refuses its call at the door (`ApprovalDenied`, with
//! the door's audit event naming the failed check), and the attempt ends with
//! [`DurableError::ForgedDecision`](super::DurableError::ForgedDecision). Decisions are
//! signed with [`DurableRun::decide_signed`](super::DurableRun::decide_signed), or
//! `tackle runs approve --key-file`.
//!
//! The key is symmetric: whoever signs decisions holds the same secret as the
//! processes that check them, so keep it where the run store's writers are not (a
//! secret store, the operators' machines). A writer of the store alone cannot make a
//! decision the runs take.

use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use super::store::{ApprovalRecord, Decision, DecisionSignature, PendingApproval};

/// The shortest secret an [`ApprovalKey`] takes, in bytes.
pub const MIN_APPROVAL_KEY_BYTES: usize = 32;

/// What every signed message begins with (a format version).
const DOMAIN: &str = "tackle-approval-decision-v1";

/// A secret that signs and checks approval decisions (HMAC-SHA256), with the id a
/// signature names it by (so keys can be rotated). Its `Debug` form shows the id only.
#[derive(Clone)]
pub struct ApprovalKey {
    id: String,
    /// The MAC keyed with the secret, cloned for each message.
    keyed: Hmac<Sha256>,
}

impl fmt::Debug for ApprovalKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApprovalKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// Why a key could not be made, or a decision did not verify.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The secret is shorter than [`MIN_APPROVAL_KEY_BYTES`].
    #[error("an approval key needs at least {MIN_APPROVAL_KEY_BYTES} bytes of secret, got {0}")]
    ShortKey(usize),
    /// The decision carries no signature.
    #[error("the decision is not signed")]
    Unsigned,
    /// The decision was signed with another key.
    #[error("the decision is signed with the key `{signed}`, not `{expected}`")]
    OtherKey {
        /// The key the signature names.
        signed: String,
        /// The key the run checks with.
        expected: String,
    },
    /// The signature does not match the decision as stored: it was edited, or made
    /// for another request or run.
    #[error("the signature does not match the decision as stored (edited, or another run's or request's)")]
    Mismatch,
}

impl ApprovalKey {
    /// A key named `id` with `secret` (at least [`MIN_APPROVAL_KEY_BYTES`] bytes).
    pub fn new(
        id: impl Into<String>,
        secret: impl Into<Vec<u8>>,
    ) -> Result<ApprovalKey, SignatureError> {
        let secret = secret.into();
        if secret.len() < MIN_APPROVAL_KEY_BYTES {
            return Err(SignatureError::ShortKey(secret.len()));
        }
        let keyed = <Hmac<Sha256> as KeyInit>::new_from_slice(&secret)
            .map_err(|_| SignatureError::ShortKey(secret.len()))?;
        Ok(ApprovalKey {
            id: id.into(),
            keyed,
        })
    }

    /// The key's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    fn mac(&self, run_id: &str, request: &PendingApproval, decision: &Decision) -> Hmac<Sha256> {
        // A JSON array of strings: each part's bounds are unambiguous.
        let decision = serde_json::to_string(decision).unwrap_or_default();
        let message = serde_json::json!([
            DOMAIN,
            run_id,
            request.key,
            request.arguments,
            request.binding,
            decision,
        ])
        .to_string();
        let mut mac = self.keyed.clone();
        mac.update(message.as_bytes());
        mac
    }

    /// The signature of `decision` on `request` in the run `run_id`.
    pub fn sign(
        &self,
        run_id: &str,
        request: &PendingApproval,
        decision: &Decision,
    ) -> DecisionSignature {
        let bytes = self.mac(run_id, request, decision).finalize().into_bytes();
        DecisionSignature {
            key_id: self.id.clone(),
            mac: bytes.iter().map(|b| format!("{b:02x}")).collect(),
        }
    }

    /// Checks that `record`, a decision of the run `run_id`, is signed by this key as
    /// it is stored.
    pub fn verify(&self, run_id: &str, record: &ApprovalRecord) -> Result<(), SignatureError> {
        let signature = record.signature.as_ref().ok_or(SignatureError::Unsigned)?;
        if signature.key_id != self.id {
            return Err(SignatureError::OtherKey {
                signed: signature.key_id.clone(),
                expected: self.id.clone(),
            });
        }
        let bytes = unhex(&signature.mac).ok_or(SignatureError::Mismatch)?;
        self.mac(run_id, &record.request, &record.decision)
            .verify_slice(&bytes)
            .map_err(|_| SignatureError::Mismatch)
    }
}

/// The bytes of lower-case or upper-case hex text, if it is that.
fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(arguments: &str) -> PendingApproval {
        PendingApproval {
            key: "bank.pay@1".to_owned(),
            arguments: arguments.to_owned(),
            binding: "00ff00ff00ff00ff".to_owned(),
        }
    }

    fn signed(key: &ApprovalKey, run: &str, decision: Decision) -> ApprovalRecord {
        let request = request(r#"{"amount":5}"#);
        ApprovalRecord {
            signature: Some(key.sign(run, &request, &decision)),
            request,
            decision,
            used: false,
            decided_by: None,
        }
    }

    #[test]
    fn a_decision_verifies_only_as_signed() {
        let key = ApprovalKey::new("ops", [7u8; 32]).unwrap();
        assert_eq!(
            ApprovalKey::new("short", [1u8; 31]).unwrap_err(),
            SignatureError::ShortKey(31)
        );
        let record = signed(&key, "run-1", Decision::Approve);
        assert_eq!(key.verify("run-1", &record), Ok(()));
        // Another run's decision copied over.
        assert_eq!(key.verify("run-2", &record), Err(SignatureError::Mismatch));
        // Other arguments.
        let mut edited = record.clone();
        edited.request.arguments = r#"{"amount":500}"#.to_owned();
        assert_eq!(key.verify("run-1", &edited), Err(SignatureError::Mismatch));
        // A rejection turned into an approval.
        let mut flipped = signed(
            &key,
            "run-1",
            Decision::Reject {
                reason: "no".into(),
            },
        );
        flipped.decision = Decision::Approve;
        assert_eq!(key.verify("run-1", &flipped), Err(SignatureError::Mismatch));
        // Unsigned, and signed by another key.
        let mut unsigned = record.clone();
        unsigned.signature = None;
        assert_eq!(
            key.verify("run-1", &unsigned),
            Err(SignatureError::Unsigned)
        );
        let other = ApprovalKey::new("other", [8u8; 32]).unwrap();
        assert!(matches!(
            key.verify("run-1", &signed(&other, "run-1", Decision::Approve)),
            Err(SignatureError::OtherKey { .. })
        ));
        // A key named as ours with another secret.
        let impostor = ApprovalKey::new("ops", [9u8; 32]).unwrap();
        assert_eq!(
            key.verify("run-1", &signed(&impostor, "run-1", Decision::Approve)),
            Err(SignatureError::Mismatch)
        );
        assert!(
            !format!("{key:?}").contains('7'),
            "the secret stays out of Debug"
        );
    }
}
