package agent

import (
	"encoding/json"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/api/wire"
	"github.com/agentsfleet/agentsfleet/shared/improve"
	"github.com/agentsfleet/agentsfleet/shared/model"
)

// The people's messages since the last answered turn reach the model as
// one user message after its last answer, so that the roles alternate
// after a failed turn too.
func TestRecallJoinsUnansweredMessages(t *testing.T) {
	t.Parallel()
	mem := memory{Seen: 2, Messages: []model.Message{
		{Role: model.User, Content: []model.Part{{Text: "a"}}},
		{Role: model.Assistant, Content: []model.Part{{Text: "b"}}},
	}}
	conv, _ := json.Marshal(mem)
	l := &improve.Log{Conversation: conv, Messages: []wire.ImprovementMessage{
		{Role: improve.RolePerson, Text: "a"}, {Role: improve.RoleAgent, Text: "b"},
		{Role: improve.RolePerson, Text: "c"}, {Role: improve.RolePerson, Text: "d"},
	}}
	got, err := recall(l)
	if err != nil {
		t.Fatal(err)
	}
	last := got.Messages[len(got.Messages)-1]
	if len(got.Messages) != 3 || last.Role != model.User || len(last.Content) != 2 || last.Content[0].Text != "c" || last.Content[1].Text != "d" {
		t.Fatalf("recall = %+v, want a, b, then one user message c + d", got.Messages)
	}
}
