package cell

import (
	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/policy"
)

// CompartmentOf applies the supervisor's identity rule to the file (dev,
// ino) at path, for the test that compares it with the audit library's.
func CompartmentOf(p *policy.Policy, dev, ino uint64, path string) (string, error) {
	ids, err := newIdentities(p)
	if err != nil {
		return "", err
	}
	objs := attribute.NewObjects(attribute.DefaultRuntime())
	defer objs.Close()
	obj := objs.File(dev, ino, path)
	if obj.Err != nil {
		return "", obj.Err
	}
	name, _ := ids.compartmentOf(obj)
	return name, nil
}
