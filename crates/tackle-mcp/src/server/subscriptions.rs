//! Resource subscriptions over every session of a server: who follows which URI
//! (a session of a client before 2026-07-28, or a 2026-07-28 client's
//! `subscriptions/listen` stream), within caps per session and in all.

use rmcp::RoleServer;

/// The peers subscribed to each resource URI, over every session.
#[derive(Default)]
pub(super) struct Subscriptions {
    by_uri: std::sync::Mutex<std::collections::BTreeMap<String, Vec<Subscriber>>>,
}

/// One subscriber of a resource: its session's id (or its `subscriptions/listen`
/// request's) and where its updates go.
pub(super) type Subscriber = (u64, Listener);

/// Where a subscriber's `notifications/resources/updated` go.
#[derive(Clone)]
pub(super) enum Listener {
    /// A session of a client before 2026-07-28 (`resources/subscribe`).
    Session(rmcp::service::Peer<RoleServer>),
    /// The stream of a 2026-07-28 client's `subscriptions/listen` request.
    Stream(rmcp::service::SubscriptionSink),
}

impl Listener {
    /// Tells the subscriber that `uri` changed; `false` when it is gone.
    pub(super) async fn updated(&self, uri: &str) -> bool {
        match self {
            Listener::Session(peer) => peer
                .notify_resource_updated(rmcp::model::ResourceUpdatedNotificationParam::new(uri))
                .await
                .is_ok(),
            Listener::Stream(sink) => sink.notify_resource_updated(uri).await.is_ok(),
        }
    }
}

/// How many resources one session may subscribe to.
pub(super) const MAX_SESSION_SUBSCRIPTIONS: usize = 64;

/// How many resources may have subscribers at once, over every session.
const MAX_SUBSCRIBED: usize = 4096;

impl Subscriptions {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::BTreeMap<String, Vec<Subscriber>>> {
        self.by_uri
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Subscribes `session` to `uri`, within the caps.
    pub(super) fn add(&self, uri: &str, session: u64, listener: Listener) -> Result<(), String> {
        let mut map = self.lock();
        if map
            .get(uri)
            .is_some_and(|l| l.iter().any(|(s, _)| *s == session))
        {
            return Ok(());
        }
        let mine = map
            .values()
            .filter(|l| l.iter().any(|(s, _)| *s == session))
            .count();
        if mine >= MAX_SESSION_SUBSCRIPTIONS {
            return Err(format!(
                "a session may subscribe to at most {MAX_SESSION_SUBSCRIPTIONS} resources"
            ));
        }
        if !map.contains_key(uri) && map.len() >= MAX_SUBSCRIBED {
            return Err("the server follows as many resources as it can".to_owned());
        }
        map.entry(uri.to_owned())
            .or_default()
            .push((session, listener));
        Ok(())
    }

    /// Unsubscribes `session` from `uri`.
    pub(super) fn remove(&self, uri: &str, session: u64) {
        let mut map = self.lock();
        if let Some(list) = map.get_mut(uri) {
            list.retain(|(s, _)| *s != session);
            if list.is_empty() {
                map.remove(uri);
            }
        }
    }

    /// The subscribers of `uri`, copied (none is held while they are told).
    pub(super) fn of(&self, uri: &str) -> Vec<Subscriber> {
        self.lock().get(uri).cloned().unwrap_or_default()
    }

    /// Forgets every subscription of `session` (its client is gone).
    pub(super) fn forget(&self, session: u64) {
        let mut map = self.lock();
        map.retain(|_, list| {
            list.retain(|(s, _)| *s != session);
            !list.is_empty()
        });
    }
}
