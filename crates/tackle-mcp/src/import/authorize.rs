//! Authorizing an import's requests to a protected HTTP server: each challenge
//! answered through the import's OAuth client, within a bounded number of rounds,
//! and the request sent again.

use std::future::Future;

use rmcp::ServiceError;

use crate::oauth_client::{Authorization, Challenge, AUTHORIZATIONS_PER_REQUEST};

/// The authorizations made for one request: at most one for a `401` and one more
/// for a step-up ([`AUTHORIZATIONS_PER_REQUEST`]), and a bounded number of times
/// sent again with a token another request got.
#[derive(Default)]
pub(super) struct Rounds {
    authorized: usize,
    rounds: usize,
}

impl Rounds {
    /// Answers `challenge` when this request may still be authorized; why not, when
    /// it may not.
    pub(super) async fn answer(
        &mut self,
        auth: &Authorization,
        challenge: &Challenge<'_>,
        seen: u64,
    ) -> Result<(), String> {
        self.rounds += 1;
        let allowed = match self.authorized {
            0 => true,
            n => n < AUTHORIZATIONS_PER_REQUEST && challenge.is_step_up(),
        };
        if !allowed || self.rounds > 2 * AUTHORIZATIONS_PER_REQUEST {
            return Err(format!(
                "the server still refuses the token after {} authorization{}",
                self.authorized,
                if self.authorized == 1 { "" } else { "s" }
            ));
        }
        if auth.answer(challenge, seen).await? {
            self.authorized += 1;
        }
        Ok(())
    }
}

/// Sends a request made by `send`; when the server answers with an authorization
/// challenge and the import has an OAuth client, answers it and sends the request
/// again (at most [`AUTHORIZATIONS_PER_REQUEST`] times). A request refused for want of
/// a token did not run, so sending it again is always safe. The outer error is an
/// authorization that failed.
pub(super) async fn authorized<T, F, Fut>(
    auth: Option<&Authorization>,
    mut send: F,
) -> Result<Result<T, ServiceError>, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ServiceError>>,
{
    let Some(auth) = auth else {
        return Ok(send().await);
    };
    let mut rounds = Rounds::default();
    loop {
        let seen = auth.tokens();
        let answer = send().await;
        match answer.as_ref().err().and_then(Challenge::of_service) {
            Some(challenge) => rounds.answer(auth, &challenge, seen).await?,
            None => return Ok(answer),
        }
    }
}
