# Python benchmark: JSON encode and decode of nested records.
import json

records = [{"id": i, "name": "n%d" % i, "tags": ["a", "b", str(i)], "score": i / 7} for i in range(10000)]
text = json.dumps(records)
back = json.loads(text)
print(len(text), sum(r["id"] for r in back))
