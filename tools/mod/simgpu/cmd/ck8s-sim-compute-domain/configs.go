package main

import (
	"fmt"
	"slices"
	"sort"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// opaqueConfig is device_state.go OpaqueDeviceConfig.
type opaqueConfig struct {
	Requests []string
	Config   runtime.Object
}

// opaqueConfigs is device_state.go GetOpaqueDeviceConfigs: class configs before claim configs (reverse
// precedence), other drivers' configs skipped, ours strictly decoded; a bad one is a permanent error.
func opaqueConfigs(possible []resourceapi.DeviceAllocationConfiguration) ([]opaqueConfig, error) {
	var class, claim []resourceapi.DeviceAllocationConfiguration
	for _, c := range possible {
		switch c.Source {
		case resourceapi.AllocationConfigSourceClass:
			class = append(class, c)
		case resourceapi.AllocationConfigSourceClaim:
			claim = append(claim, c)
		default:
			return nil, fmt.Errorf("invalid config source: %v", c.Source)
		}
	}
	var out []opaqueConfig
	for _, c := range slices.Concat(class, claim) {
		if c.Opaque == nil {
			return nil, fmt.Errorf("only opaque parameters are supported by this driver")
		}
		if c.Opaque.Driver != driverName {
			continue
		}
		obj, err := runtime.Decode(strictDecoder, c.Opaque.Parameters.Raw)
		if err != nil {
			return nil, permanentError{fmt.Errorf("error decoding config parameters: %w", err)}
		}
		out = append(out, opaqueConfig{Requests: c.Requests, Config: obj})
	}
	return out, nil
}

// configResults is device_state.go getConfigResultsMap: the defaults (a daemon and a channel
// config for no request) go first with the lowest precedence; each of our results takes the last
// config naming its request, else the last request-less config of its device type. A channel
// config on a daemon device (or the reverse) is refused; so is a device we do not have.
func configResults(configs []opaqueConfig, results []resourceapi.DeviceRequestAllocationResult) (map[runtime.Object][]resourceapi.DeviceRequestAllocationResult, error) {
	defaults := []opaqueConfig{
		{Requests: []string{}, Config: &ComputeDomainDaemonConfig{}},
		{Requests: []string{}, Config: &ComputeDomainChannelConfig{}},
	}
	all := slices.Concat(defaults, configs)
	out := map[runtime.Object][]resourceapi.DeviceRequestAllocationResult{}
	for _, r := range results {
		if r.Driver != driverName {
			continue
		}
		typ := deviceType(r.Device)
		if typ == "" {
			return nil, fmt.Errorf("requested device is not allocatable: %v", r.Device)
		}
		for _, c := range slices.Backward(all) {
			_, isChannel := c.Config.(*ComputeDomainChannelConfig)
			_, isDaemon := c.Config.(*ComputeDomainDaemonConfig)
			if slices.Contains(c.Requests, r.Request) {
				if isChannel && typ != channelType {
					return nil, fmt.Errorf("cannot apply ComputeDomainChannelConfig to request: %v", r.Request)
				}
				if isDaemon && typ != daemonType {
					return nil, fmt.Errorf("cannot apply ComputeDomainDaemonConfig to request: %v", r.Request)
				}
				out[c.Config] = append(out[c.Config], r)
				break
			}
			if len(c.Requests) == 0 {
				if (isChannel && typ != channelType) || (isDaemon && typ != daemonType) {
					continue
				}
				out[c.Config] = append(out[c.Config], r)
				break
			}
		}
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
