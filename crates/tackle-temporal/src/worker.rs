//! The worker, [`AgentWorker`]: it connects to the frontend and runs the agent workflow
//! and its activities on a task queue until told to stop, then shuts down gracefully.

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use temporalio_client::Client;
use temporalio_sdk::{Worker, WorkerOptions};

use crate::activities::DoorActivities;
use crate::agents::Agents;
use crate::connection::{connect, TemporalError};
use crate::limits::ActivityLimits;
use crate::workflow::AgentWorkflow;

/// Where a worker's client comes from.
enum Frontend {
    /// An address and namespace, connected without TLS.
    Address { address: String, namespace: String },
    /// A client made by the caller ([`connect_with`]: TLS, an API key).
    Client(Box<Client>),
}

impl std::fmt::Debug for Frontend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Frontend::Address { address, namespace } => write!(f, "{address} ({namespace})"),
            Frontend::Client(_) => f.write_str("a client given"),
        }
    }
}

/// A worker that runs [`AgentWorkflow`]s and their [`DoorActivities`] for some
/// [`Agents`] on a task queue.
///
/// **Shutting down.** [`run_until`](Self::run_until) stops taking work when its
/// signal comes, lets the calls in flight finish for up to the grace period
/// ([`with_graceful_shutdown`](Self::with_graceful_shutdown), default 30 s), then
/// cancels what is left: a cancelled call is given to another worker, or, if it is a
/// write that may have happened, waits for an operator. No task is lost: a workflow
/// task the worker had not finished goes back to the queue.
#[derive(Debug)]
pub struct AgentWorker {
    frontend: Frontend,
    task_queue: String,
    agents: Agents,
    sticky_timeout: Duration,
    grace: Duration,
    limits: ActivityLimits,
}

impl AgentWorker {
    /// A worker for `agents` on `task_queue`, in `namespace` of the frontend at
    /// `address`.
    pub fn new(
        address: impl Into<String>,
        namespace: impl Into<String>,
        task_queue: impl Into<String>,
        agents: Agents,
    ) -> AgentWorker {
        AgentWorker {
            frontend: Frontend::Address {
                address: address.into(),
                namespace: namespace.into(),
            },
            task_queue: task_queue.into(),
            agents,
            sticky_timeout: Duration::from_secs(10),
            grace: Duration::from_secs(30),
            limits: ActivityLimits::default(),
        }
    }

    /// A worker for `agents` on `task_queue`, over a client made by the caller
    /// ([`connect_with`]: TLS, an API key, a namespace).
    ///
    /// [`connect_with`]: crate::connect_with
    pub fn with_client(
        client: Client,
        task_queue: impl Into<String>,
        agents: Agents,
    ) -> AgentWorker {
        AgentWorker {
            frontend: Frontend::Client(Box::new(client)),
            ..AgentWorker::new(String::new(), String::new(), task_queue, agents)
        }
    }

    /// How long calls in flight may go on once the worker is told to stop
    /// (default 30 s); then they are cancelled.
    pub fn with_graceful_shutdown(mut self, grace: Duration) -> AgentWorker {
        self.grace = grace;
        self
    }

    /// The limits this deployment's runs are started with, checked when the worker
    /// starts ([`ActivityLimits::validate`]): a worker with limits that cannot work
    /// does not start. (Each run carries its own in its [`AgentInput`], checked when
    /// it starts.)
    ///
    /// [`AgentInput`]: crate::AgentInput
    pub fn with_limits(mut self, limits: ActivityLimits) -> AgentWorker {
        self.limits = limits;
        self
    }

    /// How long a run's next step waits for the worker that ran its last one before
    /// any worker may take it (default 10 s): how soon a run moves on when a worker
    /// dies between steps.
    pub fn with_sticky_timeout(mut self, timeout: Duration) -> AgentWorker {
        self.sticky_timeout = timeout;
        self
    }

    /// Connects and runs until the worker stops. The future is not `Send`: drive it
    /// on the task that called it (as `#[tokio::main]` does), not with `tokio::spawn`.
    pub async fn run(self) -> Result<(), TemporalError> {
        self.run_until(std::future::pending()).await
    }

    /// [`run`](Self::run) until `stop` completes (say, `tokio::signal::ctrl_c()`),
    /// then shuts down gracefully (see [`AgentWorker`]) and returns.
    pub async fn run_until(self, stop: impl Future<Output = ()>) -> Result<(), TemporalError> {
        self.limits
            .validate()
            .map_err(|e| TemporalError::Worker(e.to_string()))?;
        let client = match self.frontend {
            Frontend::Address { address, namespace } => connect(&address, &namespace).await?,
            Frontend::Client(client) => *client,
        };
        let runtime = temporalio_sdk::Runtime::from_current_tokio(Default::default())
            .map_err(|e| TemporalError::Worker(e.to_string()))?;
        let agents = self.agents.clone();
        let options = WorkerOptions::new(self.task_queue.clone())
            .register_workflow_with_factory::<AgentWorkflow, _>(move || {
                AgentWorkflow::new(agents.clone())
            })
            .map_err(|e| TemporalError::Worker(e.to_string()))?
            .register_activities(DoorActivities {
                agents: self.agents,
                client: Some(client.clone()),
                requests: Mutex::default(),
            })
            .sticky_queue_schedule_to_start_timeout(self.sticky_timeout)
            .graceful_shutdown_period(self.grace)
            .build();
        let mut worker = Worker::new(&runtime, client, options)
            .map_err(|e| TemporalError::Worker(e.to_string()))?;
        let shutdown = worker.shutdown_handle();
        let running = worker.run();
        futures::pin_mut!(running, stop);
        let result = match futures::future::select(running, stop).await {
            futures::future::Either::Left((result, _)) => result,
            futures::future::Either::Right(((), running)) => {
                shutdown();
                running.await
            }
        };
        result.map_err(|e| TemporalError::Worker(e.to_string()))
    }
}
