// Package tool is the one contract every agentsfleet tool implements,
// wherever it runs: the sandbox tools in sandboxd, the web tools in the
// webtools λ, the control tools in the runner.
//
// A tool is a Spec (name, model-facing description, JSON Schema of its
// arguments, and the check those arguments get) plus Run. Specs are made by
// Define from a Go struct of the arguments and a few Rules (defaults,
// ranges, choices) given as the same constants the tool's code uses, so the
// schema the model is shown, the description's numbers and the validation
// cannot drift apart.
//
// A product tool's Spec also says where it runs (InSandbox, InWebtools,
// InRunner, InDisplay), the API-key scope a Definition that allows it
// needs, and a summary for people (About, Info). A contract package
// defines its tools into a Set (DefineIn), so that its list of tools is
// the contracts themselves; the catalog (shared/toolbox) is every such
// contract, and nothing else names a tool.
//
// Two channels, as everywhere in agentsfleet: a mistake the model can fix
// (a wrong argument, a path outside its data) is an error Result it sees and
// acts on; a broken environment is a Go error.
//
// The package is cgo-free and imports nothing of agentsfleet, so every λ
// can use it.
package tool
