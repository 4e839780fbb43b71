package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// Questions asked at once go to the client as one input-required result;
// a call that ends while its questions are being gathered returns its
// result, and its questions are answered that the client did not.
func TestRoundGathersQuestionsAndEndsWithTheCall(t *testing.T) {
	s := &Server{opts: Options{MaxSessions: 10}}
	askOf := func(rt *pendingCall) chan error {
		errc := make(chan error, 1)
		go func() {
			_, err := rt.ask(context.Background(), &mcp.ElicitParams{Message: "name?"})
			errc <- err
		}()
		return errc
	}

	// Two questions at once: one result of two requests.
	ctx, cancel := context.WithCancel(context.Background())
	rt := &pendingCall{events: make(chan roundEvent), cancel: cancel}
	first, second := askOf(rt), askOf(rt)
	var res *mcp.CallToolResult
	for n := 0; n < 2; {
		// The second question may not have come yet when the first
		// is taken: ask again for what is still waiting.
		res = s.awaitRound(ctx, rt)
		if res.RequestState == "" {
			t.Fatalf("not a round of questions: %+v", res)
		}
		n += len(res.InputRequests)
		if n < 2 {
			s.takeRound(res.RequestState)
		}
	}
	if s.takeRound(res.RequestState) == nil {
		t.Fatal("the round was not parked")
	}
	rt.answer(mcp.InputResponseMap{})
	for _, errc := range []chan error{first, second} {
		if err := wait(t, errc); err == nil || !strings.Contains(err.Error(), "did not answer") {
			t.Errorf("an unanswered question: %v", err)
		}
	}

	// A question, then the call's end while the round is gathered.
	ctx, cancel = context.WithCancel(context.Background())
	rt = &pendingCall{events: make(chan roundEvent), cancel: cancel}
	done := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}
	asked := make(chan error, 1)
	go func() {
		a := &ask{req: &mcp.ElicitParams{Message: "sure?"}, reply: make(chan answer, 1)}
		rt.events <- roundEvent{ask: a}
		rt.events <- roundEvent{res: done} // taken by the gathering, or the next wait
		asked <- (<-a.reply).err
	}()
	for res = s.awaitRound(ctx, rt); res.RequestState != ""; res = s.awaitRound(ctx, rt) {
		s.takeRound(res.RequestState)
	}
	if res != done {
		t.Errorf("the call's result: %+v", res)
	}
	if err := wait(t, asked); err == nil {
		t.Error("the question of a call that ended was answered")
	}
	if ctx.Err() == nil {
		t.Error("the ended call's context was not cancelled")
	}
}

// wait is what errc gives, or a failure when no answer comes: a question
// left without one would wait for ever.
func wait(t *testing.T, errc chan error) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(testenv.Timeout(time.Minute)):
		t.Fatal("a question was left waiting for an answer")
		return nil
	}
}
