// A translation unit for the compile benchmark: standard containers,
// algorithms and streams instantiated over a few types.
#include <algorithm>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

template <typename K, typename V> std::map<K, V> invert(const std::map<V, K> &m)
{
	std::map<K, V> out;
	for (const auto &[k, v] : m)
		out[v] = k;
	return out;
}

int main()
{
	std::map<std::string, int> words;
	std::unordered_map<int, std::vector<std::string>> byLength;
	std::string line;
	while (std::getline(std::cin, line)) {
		std::istringstream in(line);
		std::string w;
		while (in >> w) {
			words[w]++;
			byLength[(int)w.size()].push_back(w);
		}
	}
	auto inv = invert(std::map<int, std::string>{{1, "a"}, {2, "b"}});
	std::vector<std::pair<int, std::string>> sorted;
	for (const auto &[w, n] : words)
		sorted.emplace_back(n, w);
	std::sort(sorted.rbegin(), sorted.rend());
	for (size_t i = 0; i < sorted.size() && i < 10; i++)
		std::cout << sorted[i].second << ' ' << sorted[i].first << '\n';
	std::cout << inv.size() << ' ' << byLength.size() << '\n';
}
