//! A reference skill: retrieval-augmented answers, offline.
//!
//! `rag` is an agent skill with one tool, `docs.retrieve` (term-overlap retrieval over a
//! small document set, `read`, requiring `db.docs:read`), and a deterministic model stub
//! that first asks for the passages and then assembles the answer from what came back.
//! The skill's state, `RagAnswer {answer, sources}`, is its declared output. It requires
//! the seed's capabilities: `db.vectors:read`, `db.docs:read`, and the model's grant
//! (`llm:<provider>`, tackle's form of `llm.generate`).
//!
//! Run it with `cargo run --example rag_skill -- "how does replay work?"`.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tackle::agent::model::{
    ChatRequest, ChatResponse, FunctionModel, ModelError, Role, ToolCallRequest,
};
use tackle::agent::skill::{Skill, SkillError, SkillKind, SkillRun};
use tackle::{tool, Run, Runtime, SkillState, ToolContext};

/// The document set: `(id, text)`.
pub const DOCUMENTS: &[(&str, &str)] = &[
    (
        "door",
        "Every call passes one door: capability checks, validation, replay routing, approval, time limits and audit.",
    ),
    (
        "replay",
        "Replay serves recorded outcomes from a cassette, so a test runs an agent offline without calling the model or the tools.",
    ),
    (
        "cassette",
        "A cassette is a JSON file of recorded interactions, keyed by tool and canonical input; secrets are redacted before it is written.",
    ),
    (
        "skills",
        "A skill packages tools, a prompt, required capabilities and a typed state whose fields are its declared output keys.",
    ),
    (
        "pipelines",
        "A pipeline document is a YAML graph of tool and broker nodes run in order over a shared state.",
    ),
];

/// Finds the passages that share the most words with `query` (a title word counts
/// twice), best first.
#[tool(namespace = "docs", version = "1", side_effects = read, requires_capability = "db.docs:read")]
pub fn retrieve(query: String, k: Option<u32>) -> Vec<Value> {
    let words = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 3)
            .map(str::to_lowercase)
            .collect()
    };
    let asked = words(&query);
    let mut scored: Vec<(usize, &str, &str)> = DOCUMENTS
        .iter()
        .map(|(id, text)| {
            let found = words(text);
            // A word of the passage's title counts twice.
            let overlap = asked.iter().filter(|w| found.contains(w)).count()
                + asked.iter().filter(|w| w.as_str() == *id).count();
            (overlap, *id, *text)
        })
        .filter(|(overlap, _, _)| *overlap > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(k.unwrap_or(2) as usize)
        .map(|(score, id, text)| json!({"id": id, "text": text, "score": score}))
        .collect()
}

/// The skill's state: the answer and the passages it rests on.
#[derive(Debug, Serialize, Deserialize, JsonSchema, SkillState)]
pub struct RagAnswer {
    /// The answer.
    pub answer: String,
    /// The ids of the passages used.
    pub sources: Vec<String>,
}

/// The skill.
pub fn rag_skill() -> Result<Skill, SkillError> {
    Skill::builder::<RagAnswer>("rag", "0.1.0", SkillKind::Agent)
        .with_description("Answers a question from the document set, citing its passages.")
        .with_tools(&[retrieve::KEY])
        .with_system_prompt("Retrieve passages first, then answer from them alone.")
        .with_requires(&["db.vectors:read", "db.docs:read", "llm:function"])
        .with_example(
            json!({"task": "what is a cassette?"}),
            Some(json!({
                "answer": "A cassette is a JSON file of recorded interactions, keyed by tool and canonical input; secrets are redacted before it is written.",
                "sources": ["cassette", "replay"],
            })),
        )
        .build()
}

/// The model stub: asks for passages, then answers from the first one and cites
/// those returned.
fn stub(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
    let passages = request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Tool)
        .map(|m| serde_json::from_str::<Vec<Value>>(&m.content));
    match passages {
        None => {
            let question = request
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::User)
                .map(|m| m.content.clone())
                .unwrap_or_default();
            Ok(ChatResponse::calls(
                "I need passages first.",
                vec![ToolCallRequest {
                    id: "r1".into(),
                    name: "docs_retrieve".into(),
                    arguments: json!({"query": question}),
                }],
            ))
        }
        Some(Err(e)) => Err(ModelError::Malformed {
            message: format!("the passages are not JSON: {e}"),
        }),
        Some(Ok(passages)) => {
            let answer = passages
                .first()
                .and_then(|p| p["text"].as_str())
                .unwrap_or("The documents do not say.");
            let sources: Vec<&str> = passages.iter().filter_map(|p| p["id"].as_str()).collect();
            Ok(ChatResponse::text(
                json!({"answer": answer, "sources": sources}).to_string(),
            ))
        }
    }
}

/// Runs the skill on `question`, offline.
pub async fn ask(question: &str) -> Result<SkillRun<RagAnswer>, Box<dyn std::error::Error>> {
    let runtime = Arc::new(Runtime::from_inventory()?);
    let skill = rag_skill()?;
    skill.check_tools(runtime.registry())?;
    let ctx = ToolContext::new()
        .with_grant("db.vectors:read")
        .with_grant("db.docs:read")
        .with_grant("llm:function");
    let model = Arc::new(FunctionModel::new("rag-stub", stub));
    Ok(skill
        .run::<RagAnswer>(model, &Run::new(&runtime), question, &ctx)
        .await?)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let question = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "how does replay work?".to_owned());
    let done = ask(&question).await?;
    println!("{}", done.state.answer);
    println!("sources: {}", done.state.sources.join(", "));
    Ok(())
}
