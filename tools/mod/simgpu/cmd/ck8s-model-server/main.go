// Command ck8s-model-server is the model-server stand-in of the smoke test's `inference` case
// (components/smoke/cases/inference.py): an OpenAI-compatible HTTP endpoint that answers with the
// backend, pod and GPUs it runs on, and exports Prometheus metrics under the names vLLM uses, so the
// routes, autoscalers and monitors written for it serve a real vLLM unchanged.
//
// It serves no model. What it proves is the path a request takes: gateway route, Service, pod, the
// GPU its ResourceClaim gave it (read from inside, by running nvidia-smi as a model server's CUDA
// runtime would see the devices the claim's CDI spec injected).
//
// Shapes, from their sources:
//   - POST /v1/chat/completions and /v1/completions: the OpenAI API's ChatCompletion / Completion
//     objects (id, object, created, model, choices, usage), the subset clients read; the answer's
//     `system_fingerprint` is "<backend>/<pod>" and the extra object `ck8s` names backend, pod, node
//     and GPUs (the smoke verifier reads it).
//   - GET /v1/models: the OpenAI model list (object "list", data[].id/object/owned_by).
//   - GET /metrics: Prometheus text format 0.0.4. vllm:num_requests_running and
//     vllm:num_requests_waiting are vLLM's scheduler gauges, labelled model_name (vLLM
//     docs/design/v1/metrics.md, the metrics kept from v0: the running and the waiting queue);
//     ck8s_model_requests_total counts answers by backend and code.
//   - POST /admin/queue?waiting=N: sets the waiting queue the gauge reports (the smoke test drives
//     the autoscaler with it; a real server's queue grows under load).
//   - GET /healthz: 200 once nvidia-smi listed at least one GPU, 503 with the reason otherwise (a
//     replica without its GPU never becomes Ready, so no route sends it traffic).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type server struct {
	backend, model, pod, node string
	gpus                      []string
	gpuErr                    string
	waiting                   atomic.Int64
	running                   atomic.Int64
	mu                        sync.Mutex
	answered                  map[string]int64 // "<code>" -> answers
	seq                       atomic.Int64
}

// visibleGPUs runs nvidia-smi as the container sees it: the UUIDs of the GPUs the claim's CDI
// spec injected (the simulated nvidia-smi of tools/mod/simgpu reads the same devices).
func visibleGPUs(smi string) ([]string, string) {
	out, err := exec.Command(smi, "--query-gpu=uuid", "--format=csv,noheader").CombinedOutput()
	if err != nil {
		return nil, fmt.Sprintf("%s: %v: %s", smi, err, strings.TrimSpace(string(out)))
	}
	var gpus []string
	for _, line := range strings.Split(string(out), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			gpus = append(gpus, line)
		}
	}
	if len(gpus) == 0 {
		return nil, smi + " listed no GPU"
	}
	sort.Strings(gpus)
	return gpus, ""
}

func (s *server) count(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answered[strconv.Itoa(code)]++
}

func (s *server) writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Served-By", s.pod)
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *server) identity() map[string]any {
	return map[string]any{"backend": s.backend, "pod": s.pod, "node": s.node, "gpus": s.gpus, "model": s.model}
}

func (s *server) complete(chat bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			s.count(http.StatusMethodNotAllowed)
			s.writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"error": map[string]any{
				"message": "use POST", "type": "invalid_request_error"}})
			return
		}
		s.running.Add(1)
		defer s.running.Add(-1)
		var req struct {
			Model string `json:"model"`
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if len(body) > 0 {
			if err := json.Unmarshal(body, &req); err != nil {
				s.count(http.StatusBadRequest)
				s.writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
					"message": "body is not JSON: " + err.Error(), "type": "invalid_request_error"}})
				return
			}
		}
		if len(s.gpus) == 0 {
			s.count(http.StatusServiceUnavailable)
			s.writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": map[string]any{
				"message": "no GPU: " + s.gpuErr, "type": "server_error"}, "ck8s": s.identity()})
			return
		}
		model := req.Model
		if model == "" {
			model = s.model
		}
		text := fmt.Sprintf("served by %s (%s) on %s", s.backend, s.pod, strings.Join(s.gpus, ","))
		choice := map[string]any{"index": 0, "finish_reason": "stop"}
		object := "text_completion"
		if chat {
			object = "chat.completion"
			choice["message"] = map[string]any{"role": "assistant", "content": text}
		} else {
			choice["text"] = text
		}
		s.count(http.StatusOK)
		s.writeJSON(w, http.StatusOK, map[string]any{
			"id":                 fmt.Sprintf("cmpl-%s-%d", s.pod, s.seq.Add(1)),
			"object":             object,
			"created":            time.Now().Unix(),
			"model":              model,
			"system_fingerprint": s.backend + "/" + s.pod,
			"choices":            []any{choice},
			"usage":              map[string]any{"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
			"ck8s":               s.identity(),
		})
	}
}

// openAI serves the OpenAI paths under any prefix (`/v1/chat/completions`, or
// `/smoke/<run>/v1/chat/completions` as the smoke case's route sends them: a prefix of its own, so
// its route never shadows, nor is shadowed by, another model's on the shared Gateway).
func (s *server) openAI(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasSuffix(r.URL.Path, "/v1/chat/completions"):
		s.complete(true)(w, r)
	case strings.HasSuffix(r.URL.Path, "/v1/completions"):
		s.complete(false)(w, r)
	case strings.HasSuffix(r.URL.Path, "/v1/models"):
		s.models(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (s *server) models(w http.ResponseWriter, _ *http.Request) {
	s.writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
		map[string]any{"id": s.model, "object": "model", "owned_by": "ck8s-gpu"}}})
}

func (s *server) healthz(w http.ResponseWriter, _ *http.Request) {
	if len(s.gpus) == 0 {
		http.Error(w, "no GPU: "+s.gpuErr, http.StatusServiceUnavailable)
		return
	}
	_, _ = io.WriteString(w, "ok\n")
}

func (s *server) setQueue(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "use POST", http.StatusMethodNotAllowed)
		return
	}
	n, err := strconv.ParseInt(r.URL.Query().Get("waiting"), 10, 64)
	if err != nil || n < 0 {
		http.Error(w, "waiting must be a whole number >= 0", http.StatusBadRequest)
		return
	}
	s.waiting.Store(n)
	s.writeJSON(w, http.StatusOK, map[string]any{"waiting": n, "ck8s": s.identity()})
}

// escape a Prometheus label value (text format 0.0.4: backslash, double quote, line feed).
func escape(v string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v)
}

func (s *server) metrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	m := escape(s.model)
	fmt.Fprintf(w, "# HELP vllm:num_requests_running Number of requests in model execution batches.\n")
	fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\n")
	fmt.Fprintf(w, "vllm:num_requests_running{model_name=\"%s\"} %d\n", m, s.running.Load())
	fmt.Fprintf(w, "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n")
	fmt.Fprintf(w, "# TYPE vllm:num_requests_waiting gauge\n")
	fmt.Fprintf(w, "vllm:num_requests_waiting{model_name=\"%s\"} %d\n", m, s.waiting.Load())
	fmt.Fprintf(w, "# HELP ck8s_model_requests_total Completions answered, by HTTP status code.\n")
	fmt.Fprintf(w, "# TYPE ck8s_model_requests_total counter\n")
	s.mu.Lock()
	codes := make([]string, 0, len(s.answered))
	for c := range s.answered {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		fmt.Fprintf(w, "ck8s_model_requests_total{backend=\"%s\",code=\"%s\"} %d\n", escape(s.backend), c, s.answered[c])
	}
	s.mu.Unlock()
	fmt.Fprintf(w, "# HELP ck8s_model_gpu_info The GPUs this server sees (nvidia-smi), one series each.\n")
	fmt.Fprintf(w, "# TYPE ck8s_model_gpu_info gauge\n")
	for _, g := range s.gpus {
		fmt.Fprintf(w, "ck8s_model_gpu_info{uuid=\"%s\"} 1\n", escape(g))
	}
}

func main() {
	listen := flag.String("listen", ":8080", "address to serve on")
	backend := flag.String("backend", "", "the backend this replica belongs to (the Deployment's role)")
	model := flag.String("model", "", "the model name it answers for")
	smi := flag.String("nvidia-smi", "nvidia-smi", "the nvidia-smi to list the visible GPUs with")
	flag.Parse()
	if *backend == "" || *model == "" {
		fmt.Fprintln(os.Stderr, "ck8s-model-server: --backend and --model are required")
		os.Exit(2)
	}
	s := &server{backend: *backend, model: *model, pod: os.Getenv("POD_NAME"), node: os.Getenv("NODE_NAME"),
		answered: map[string]int64{}}
	if s.pod == "" {
		s.pod, _ = os.Hostname()
	}
	s.gpus, s.gpuErr = visibleGPUs(*smi)
	if s.gpuErr != "" {
		log.Printf("CK8S-MODEL no-gpu %s", s.gpuErr)
	} else {
		log.Printf("CK8S-MODEL gpus %s", strings.Join(s.gpus, ","))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", s.openAI)
	mux.HandleFunc("/healthz", s.healthz)
	mux.HandleFunc("/metrics", s.metrics)
	mux.HandleFunc("/admin/queue", s.setQueue)
	log.Printf("CK8S-MODEL serving %s as backend %s on %s", *model, *backend, *listen)
	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
