-- Hand-written: the proposals that were waiting when the version published now was published
-- (20261205074659_policy_superseded_proposals) are superseded, as a publication marks them from
-- now on. Only this once is a time compared: from now on the publication marks them itself.
UPDATE "PolicyVersion" p SET "status" = 'superseded'
FROM "PolicyVersion" published
WHERE p."status" = 'proposed' AND published."status" = 'published' AND p."createdAt" < published."publishedAt";
