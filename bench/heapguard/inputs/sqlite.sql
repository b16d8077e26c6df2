-- The sqlite benchmark: an in-memory table built, indexed, grouped and
-- rewritten, as in sqlite's speedtest1.
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, grp INTEGER, val REAL);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30000)
INSERT INTO t SELECT i, printf('name-%d-%x', i, i * 7919), i % 97, i * 0.5 FROM n;
CREATE INDEX t_grp ON t(grp, name);
SELECT grp, count(*), sum(val), max(name) FROM t GROUP BY grp ORDER BY 2 DESC LIMIT 3;
UPDATE t SET name = upper(name) || '-' || grp WHERE id % 3 = 0;
DELETE FROM t WHERE id % 5 = 0;
SELECT count(*), sum(length(name)) FROM t WHERE name LIKE '%A%';
SELECT group_concat(name, ',') IS NOT NULL FROM (SELECT name FROM t ORDER BY name DESC LIMIT 2000);
