package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func newServer(gpus []string, gpuErr string) *server {
	return &server{backend: "canary", model: "llm-b", pod: "pod-1", node: "node-0", gpus: gpus, gpuErr: gpuErr,
		answered: map[string]int64{}}
}

func do(t *testing.T, h http.HandlerFunc, method, target, body string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest(method, target, strings.NewReader(body)))
	return rec
}

func TestChatCompletionNamesBackendPodAndGPU(t *testing.T) {
	s := newServer([]string{"GPU-1"}, "")
	rec := do(t, s.complete(true), http.MethodPost, "/v1/chat/completions", `{"model":"llm-b","messages":[]}`)
	if rec.Code != http.StatusOK || rec.Header().Get("X-Served-By") != "pod-1" {
		t.Fatalf("code %d, served by %q", rec.Code, rec.Header().Get("X-Served-By"))
	}
	var out struct {
		Object            string `json:"object"`
		SystemFingerprint string `json:"system_fingerprint"`
		Ck8s              struct {
			Backend string   `json:"backend"`
			Gpus    []string `json:"gpus"`
		} `json:"ck8s"`
		Choices []struct {
			Message struct{ Role, Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if out.Object != "chat.completion" || out.SystemFingerprint != "canary/pod-1" || out.Ck8s.Backend != "canary" || len(out.Ck8s.Gpus) != 1 ||
		out.Ck8s.Gpus[0] != "GPU-1" || len(out.Choices) != 1 || out.Choices[0].Message.Role != "assistant" {
		t.Fatalf("unexpected answer %s", rec.Body.String())
	}
}

func TestNoGPUMeansNotReadyAndNoAnswer(t *testing.T) {
	s := newServer(nil, "nvidia-smi: exec: not found")
	if rec := do(t, s.healthz, http.MethodGet, "/healthz", ""); rec.Code != http.StatusServiceUnavailable ||
		!strings.Contains(rec.Body.String(), "not found") {
		t.Fatalf("healthz %d %q", rec.Code, rec.Body.String())
	}
	if rec := do(t, s.complete(false), http.MethodPost, "/v1/completions", `{}`); rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("completion without a GPU answered %d", rec.Code)
	}
}

func TestRefusesWhatIsNotACompletion(t *testing.T) {
	s := newServer([]string{"GPU-1"}, "")
	if rec := do(t, s.complete(true), http.MethodGet, "/v1/chat/completions", ""); rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("GET answered %d", rec.Code)
	}
	if rec := do(t, s.complete(true), http.MethodPost, "/v1/chat/completions", "{"); rec.Code != http.StatusBadRequest {
		t.Fatalf("broken JSON answered %d", rec.Code)
	}
	for _, q := range []string{"", "waiting=-1", "waiting=x"} {
		if rec := do(t, s.setQueue, http.MethodPost, "/admin/queue?"+q, ""); rec.Code != http.StatusBadRequest {
			t.Fatalf("queue %q answered %d", q, rec.Code)
		}
	}
}

func TestMetricsReportTheDrivenQueueAndEveryAnswer(t *testing.T) {
	s := newServer([]string{"GPU-1"}, "")
	s.model = `a"b`
	do(t, s.complete(true), http.MethodPost, "/v1/chat/completions", `{}`)
	do(t, s.complete(true), http.MethodPost, "/v1/chat/completions", `{`)
	if rec := do(t, s.setQueue, http.MethodPost, "/admin/queue?waiting=7", ""); rec.Code != http.StatusOK {
		t.Fatalf("queue answered %d", rec.Code)
	}
	body := do(t, s.metrics, http.MethodGet, "/metrics", "").Body.String()
	for _, want := range []string{
		`vllm:num_requests_waiting{model_name="a\"b"} 7`,
		`vllm:num_requests_running{model_name="a\"b"} 0`,
		`ck8s_model_requests_total{backend="canary",code="200"} 1`,
		`ck8s_model_requests_total{backend="canary",code="400"} 1`,
		`ck8s_model_gpu_info{uuid="GPU-1"} 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}

func TestOpenAIPathsAnswerUnderAnyPrefix(t *testing.T) {
	s := newServer([]string{"GPU-1"}, "")
	for _, path := range []string{"/v1/chat/completions", "/smoke/ab12cd34/v1/chat/completions"} {
		if rec := do(t, s.openAI, http.MethodPost, path, `{}`); rec.Code != http.StatusOK {
			t.Fatalf("%s answered %d", path, rec.Code)
		}
	}
	if rec := do(t, s.openAI, http.MethodGet, "/smoke/ab12cd34/v1/models", ""); rec.Code != http.StatusOK {
		t.Fatalf("models answered %d", rec.Code)
	}
	if rec := do(t, s.openAI, http.MethodPost, "/v1/embeddings", `{}`); rec.Code != http.StatusNotFound {
		t.Fatalf("an unknown path answered %d", rec.Code)
	}
}
