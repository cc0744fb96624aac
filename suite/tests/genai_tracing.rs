//! Model and tool calls traced by the OpenTelemetry GenAI conventions, and a run's
//! token usage and cost, seen by a capturing subscriber (`capture::capturing`, which
//! keeps other tests' threads from deciding the spans' sites for it).

use crate::support::capture;

use std::sync::Arc;

use capture::Capture;
use rust_decimal::Decimal;
use serde_json::json;
use tackle::agent::model::{
    ChatRequest, ChatResponse, FunctionModel, ModelError, Pricing, Role, ToolCallRequest, Usage,
};
use tackle::{tool, Agent, Run, Runtime};

/// Tomorrow's forecast for a city.
#[tool(namespace = "weather", side_effects = read)]
fn tomorrow(city: String) -> Result<String, String> {
    match city.as_str() {
        "Bergen" => Ok("rain, 9°C".to_owned()),
        other => Err(format!("no forecast for {other}")),
    }
}

/// Asks for two forecasts at once (one fails), then answers; reports its tokens.
fn forecaster(request: &ChatRequest) -> Result<ChatResponse, ModelError> {
    let observed = request.messages.iter().any(|m| m.role == Role::Tool);
    let mut response = if observed {
        ChatResponse::text("Rain in Bergen.")
    } else {
        ChatResponse::calls(
            "",
            vec![
                ToolCallRequest {
                    id: "call-1".into(),
                    name: "weather_tomorrow".into(),
                    arguments: json!({"city": "Bergen"}),
                },
                ToolCallRequest {
                    id: "call-2".into(),
                    name: "weather_tomorrow".into(),
                    arguments: json!({"city": "Atlantis"}),
                },
            ],
        )
    };
    response.usage = Some(if observed {
        Usage {
            input_tokens: 900,
            output_tokens: 40,
        }
    } else {
        Usage {
            input_tokens: 700,
            output_tokens: 60,
        }
    });
    Ok(response)
}

#[test]
fn model_and_tool_calls_follow_the_genai_conventions_and_runs_report_usage_and_cost() {
    let capture = Arc::new(Capture::default());
    let runtime = Arc::new(Runtime::from_inventory_in(module_path!()).unwrap());
    let agent = Agent::new(FunctionModel::new("forecaster-1", forecaster))
        .tools(["weather.tomorrow"])
        // 3.00 per million input tokens, 15.00 per million output tokens.
        .configure(|skill| {
            skill.with_pricing(
                "forecaster-1",
                Pricing::per_million(Decimal::new(300, 2), Decimal::new(1500, 2)),
            )
        });
    let state = capture::capturing(&capture, || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async { agent.run(&Run::new(&runtime), "Rain tomorrow?").await })
            .unwrap()
            .state
    });
    assert_eq!(state.final_answer.as_deref(), Some("Rain in Bergen."));
    assert_eq!(
        state.usage,
        Usage {
            input_tokens: 1600,
            output_tokens: 100
        }
    );
    // (1600 * 3 + 100 * 15) / 1,000,000 = 0.0063
    assert_eq!(state.cost, Some(Decimal::new(63, 4)));

    let spans = capture.spans.lock().unwrap().clone();
    let chats: Vec<&String> = spans.iter().filter(|s| s.starts_with("chat ")).collect();
    assert_eq!(chats.len(), 2, "{spans:#?}");
    for field in [
        "otel.name=chat forecaster-1",
        "gen_ai.operation.name=chat",
        "gen_ai.provider.name=function",
        "gen_ai.request.model=forecaster-1",
        "gen_ai.usage.input_tokens=700",
        "gen_ai.usage.output_tokens=60",
    ] {
        assert!(chats[0].contains(field), "{field} in {}", chats[0]);
    }
    assert!(
        chats[1].contains("gen_ai.usage.input_tokens=900"),
        "{}",
        chats[1]
    );
    let tools: Vec<&String> = spans
        .iter()
        .filter(|s| s.starts_with("execute_tool "))
        .collect();
    assert_eq!(tools.len(), 2, "{spans:#?}");
    let of = |id: &str| {
        tools
            .iter()
            .find(|s| s.contains(&format!("gen_ai.tool.call.id={id}")))
            .unwrap_or_else(|| panic!("a span for {id}: {tools:#?}"))
    };
    for field in [
        "otel.name=execute_tool weather.tomorrow@1",
        "gen_ai.operation.name=execute_tool",
        "gen_ai.tool.name=weather.tomorrow@1",
    ] {
        assert!(of("call-1").contains(field), "{field} in {}", of("call-1"));
    }
    assert!(!of("call-1").contains("error.type"), "{}", of("call-1"));
    assert!(
        of("call-2").contains("error.type=Execution"),
        "{}",
        of("call-2")
    );
}
