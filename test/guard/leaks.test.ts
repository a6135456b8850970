import { leakScenario } from '../support/leak-scenario'

// The scenario lives in test/support/leak-scenario.ts so every way of reaching the engine runs the same
// cases: here the binding itself; test/ecosystem/openai-http.test.ts the OpenAI-compatible HTTP adapter.
leakScenario('binding', (engine) => engine.binding('account'))
