package gate

import (
	resourcev1 "k8s.io/api/resource/v1"
)

// AddRequests adds to d what the requests of one claim ask of DeviceClass `class`:
// allocationMode All is a whole node of the pool; ExactCount is `count` GPUs (default 1). A
// firstAvailable request counts its first subrequest of the class (the one the scheduler tries
// first); the others are alternatives this model does not weigh.
func (d Demand) AddRequests(requests []resourcev1.DeviceRequest, class string) Demand {
	for _, r := range requests {
		mode, count, ok := "", int64(0), false
		switch {
		case r.Exactly != nil && r.Exactly.DeviceClassName == class:
			mode, count, ok = string(r.Exactly.AllocationMode), r.Exactly.Count, true
		case r.Exactly == nil:
			for _, sub := range r.FirstAvailable {
				if sub.DeviceClassName == class {
					mode, count, ok = string(sub.AllocationMode), sub.Count, true
					break
				}
			}
		}
		if !ok {
			continue
		}
		if mode == string(resourcev1.DeviceAllocationModeAll) {
			d.WholeNode = true
			continue
		}
		if count <= 0 {
			count = 1
		}
		d.GPUs += int(count)
	}
	return d
}
