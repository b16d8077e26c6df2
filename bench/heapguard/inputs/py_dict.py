# Python benchmark: many small objects in dicts and lists (every object is
# a malloc under PYTHONMALLOC=malloc).
d = {}
for i in range(60000):
    d[str(i)] = [i, i * 2, str(i * 3)]
print(sum(len(k) + v[0] for k, v in d.items()))
