package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TableSpec is the table's shape, shared by the local stack, the tests and (mirrored) the
// CDK stack: keys, the scope, due and attention indexes, the stream and TTL.
func TableSpec(name string) *dynamodb.CreateTableInput {
	str := func(n string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS}
	}
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{str(attrPK), str(attrSK), str(attrGSI1PK), str(attrGSI1SK), str(attrDueShard), str(attrDueAt),
			str(attrAttention), str(attrAttentionAt)},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrSK), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(IndexByScope),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(attrGSI1PK), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(attrGSI1SK), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}, {
			IndexName: aws.String(IndexDue),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(attrDueShard), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(attrDueAt), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude,
				NonKeyAttributes: []string{attrVersion, attrAttempts}},
		}, {
			IndexName: aws.String(IndexAttention),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(attrAttention), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(attrAttentionAt), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude,
				NonKeyAttributes: []string{attrTenant, attrType, attrTarget, attrRep, attrGSI1PK}},
		}},
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
	}
}

// CreateTable creates the table and enables TTL on expires_at. An existing table is fine.
func CreateTable(ctx context.Context, client *dynamodb.Client, name string) error {
	_, err := client.CreateTable(ctx, TableSpec(name))
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	if err := dynamodb.NewTableExistsWaiter(client).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, defaultWait); err != nil {
		return fmt.Errorf("wait for table %s: %w", name, err)
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attrExpiresAt), Enabled: aws.Bool(true)},
	})
	if err != nil && !isTTLAlreadyEnabled(err) {
		return fmt.Errorf("enable TTL on %s: %w", name, err)
	}
	return nil
}

func isTTLAlreadyEnabled(err error) bool {
	var ve interface{ ErrorCode() string }
	return errors.As(err, &ve) && ve.ErrorCode() == "ValidationException"
}
